// Loads the `mongodb` Node driver installed for the integration tests (tests/integration/node_modules),
// so the spec runner needs no package.json or node_modules of its own.
import { createRequire } from 'node:module';

const require = createRequire(new URL('../integration/package.json', import.meta.url));

let mongodb;
try {
    mongodb = require('mongodb');
} catch (err) {
    throw new Error(
        'cannot load the mongodb driver from tests/integration/node_modules ' +
            `(run \`npm ci\` in tests/integration): ${err.message}`
    );
}

export default mongodb;
export const BSON = mongodb.BSON;
export const EJSON = mongodb.BSON.EJSON;
