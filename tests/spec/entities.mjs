// Entity map of the unified test format: clients (with command/CMAP event capture), databases,
// collections, sessions, and result entities (cursors, saved values).
import mongodb, { BSON } from './driver.mjs';
import { UnsupportedError, isDocument } from './matcher.mjs';

// The command as it was sent, not as the driver's objects look later: the Node driver hands the
// event the objects it keeps (7.9 assigns the client's readConcern object itself to a
// transaction's first statement and then adds afterClusterTime to it in place at the next
// transaction), so a recorded event must be a copy taken when it fires, as every APM consumer
// that serializes the event sees it.
function snapshotOf(command) {
    return BSON.deserialize(BSON.serialize(command), { promoteLongs: false, promoteBuffers: false });
}

const { MongoClient, ReadPreference, ObjectId } = mongodb;

/**
 * The Node driver replaces an explicit `_id: null` by a new ObjectId (it tests `_id == null`),
 * which the spec forbids (crud/create-null-ids.json). Before an insert the runner queues, per
 * document that will reach createPk, either null (explicit null _id) or a fresh ObjectId.
 */
export const QUEUED_PK = Symbol('queuedPkFactory');

// A plain object: the driver only accepts plain records as pkFactory.
export function createQueuedPkFactory() {
    const f = {
        queue: [],
        createPk() {
            return f.queue.length > 0 ? f.queue.shift() : new ObjectId();
        },
        /** Queues ids for `docs` (in the order the driver will visit them). */
        prepare(docs) {
            f.queue = [];
            for (const d of docs) {
                if (d === null || typeof d !== 'object') continue;
                if (Object.prototype.hasOwnProperty.call(d, '_id') && d._id === null) f.queue.push(null);
                else if (d._id === undefined) f.queue.push(new ObjectId());
            }
        },
        clear() {
            f.queue = [];
        },
    };
    Object.defineProperty(f, QUEUED_PK, { value: true });
    return f;
}

const SENSITIVE_COMMANDS = new Set([
    'authenticate',
    'saslstart',
    'saslcontinue',
    'getnonce',
    'createuser',
    'updateuser',
    'copydbgetnonce',
    'copydbsaslstart',
    'copydb',
]);

const COMMAND_EVENTS = {
    commandStarted: 'commandStartedEvent',
    commandSucceeded: 'commandSucceededEvent',
    commandFailed: 'commandFailedEvent',
};

const CMAP_EVENTS = {
    connectionPoolCreated: 'poolCreatedEvent',
    connectionPoolReady: 'poolReadyEvent',
    connectionPoolCleared: 'poolClearedEvent',
    connectionPoolClosed: 'poolClosedEvent',
    connectionCreated: 'connectionCreatedEvent',
    connectionReady: 'connectionReadyEvent',
    connectionClosed: 'connectionClosedEvent',
    connectionCheckOutStarted: 'connectionCheckOutStartedEvent',
    connectionCheckOutFailed: 'connectionCheckOutFailedEvent',
    connectionCheckedOut: 'connectionCheckedOutEvent',
    connectionCheckedIn: 'connectionCheckedInEvent',
};

export const COMMAND_EVENT_TYPES = new Set(Object.values(COMMAND_EVENTS));
export const CMAP_EVENT_TYPES = new Set(Object.values(CMAP_EVENTS));

const SUPPORTED_CLIENT_KEYS = new Set([
    'id',
    'uriOptions',
    'useMultipleMongoses',
    'observeEvents',
    'ignoreCommandMonitoringEvents',
    'observeSensitiveCommands',
    'serverApi',
    'storeEventsAsEntities',
    'awaitMinPoolSizeMS',
]);

function placeholderCheck(value, where) {
    if (isDocument(value) && Object.keys(value).length === 1 && '$$placeholder' in value) {
        throw new UnsupportedError(`$$placeholder in ${where} (no value available in this environment)`);
    }
}

function uriValue(key, value) {
    placeholderCheck(value, `uriOptions.${key}`);
    if (isDocument(value)) {
        return Object.entries(value)
            .map(([k, v]) => {
                placeholderCheck(v, `uriOptions.${key}.${k}`);
                return `${k}:${v}`;
            })
            .join(',');
    }
    return String(value);
}

/** The hosts of a `mongodb://` URI, in order ("h1:p1,h2:p2" → ['h1:p1', 'h2:p2']). */
export function hostsOf(uri) {
    const schemeEnd = uri.indexOf('://');
    const rest = schemeEnd < 0 ? uri : uri.slice(schemeEnd + 3);
    const end = rest.search(/[/?]/);
    const authority = end < 0 ? rest : rest.slice(0, end);
    const hosts = authority.slice(authority.lastIndexOf('@') + 1);
    return hosts.split(',').filter((h) => h.length > 0);
}

/** `uri` naming only `hosts` (its credentials, path and options kept). */
export function withHosts(uri, hosts) {
    const schemeEnd = uri.indexOf('://');
    const head = schemeEnd < 0 ? '' : uri.slice(0, schemeEnd + 3);
    const rest = schemeEnd < 0 ? uri : uri.slice(schemeEnd + 3);
    const end = rest.search(/[/?]/);
    const authority = end < 0 ? rest : rest.slice(0, end);
    const tail = end < 0 ? '' : rest.slice(end);
    const at = authority.lastIndexOf('@');
    return head + authority.slice(0, at + 1) + hosts.join(',') + tail;
}

/**
 * The URI a client entity connects with. At a sharded profile the run's URI lists every router:
 * a client with `useMultipleMongoses: true` gets them all (the driver picks one per operation, a
 * transaction pins one), any other client only the first, as the unified format requires of
 * `useMultipleMongoses: false` and allows when it is absent. Other profiles: the URI as given
 * (a replica set's hosts are a seed list).
 */
export function clientUri(uri, profile, useMultipleMongoses) {
    const hosts = hostsOf(uri);
    if (hosts.length <= 1 || profile?.topology !== 'sharded' || useMultipleMongoses === true) return uri;
    return withHosts(uri, hosts.slice(0, 1));
}

/** Returns `uri` with `uriOptions` applied (they override options already in the URI). */
export function applyUriOptions(uri, uriOptions = {}, defaults = {}) {
    const q = uri.indexOf('?');
    let head = q < 0 ? uri : uri.slice(0, q);
    const query = q < 0 ? '' : uri.slice(q + 1);
    const schemeEnd = head.indexOf('://');
    if (schemeEnd >= 0 && !head.slice(schemeEnd + 3).includes('/')) head += '/';
    const override = new Set(Object.keys(uriOptions).map((k) => k.toLowerCase()));
    const params = query
        .split('&')
        .filter((p) => p.length > 0)
        .filter((p) => !override.has(decodeURIComponent(p.split('=')[0]).toLowerCase()));
    const present = new Set(params.map((p) => decodeURIComponent(p.split('=')[0]).toLowerCase()));
    for (const [key, value] of Object.entries(uriOptions)) {
        const values = Array.isArray(value) ? value : [value];
        for (const v of values) params.push(`${encodeURIComponent(key)}=${encodeURIComponent(uriValue(key, v))}`);
    }
    for (const [key, value] of Object.entries(defaults)) {
        if (!present.has(key.toLowerCase()) && !override.has(key.toLowerCase())) {
            params.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`);
        }
    }
    return params.length > 0 ? `${head}?${params.join('&')}` : head;
}

export function toReadPreference(rp) {
    if (rp === undefined || rp === null) return undefined;
    if (rp instanceof ReadPreference) return rp;
    const { mode, tagSets, maxStalenessSeconds, hedge, ...rest } = rp;
    if (Object.keys(rest).length > 0) throw new UnsupportedError(`readPreference field(s) ${Object.keys(rest)}`);
    const options = {};
    if (maxStalenessSeconds !== undefined) options.maxStalenessSeconds = maxStalenessSeconds;
    if (hedge !== undefined) options.hedge = hedge;
    return new ReadPreference(mode, tagSets, options);
}

/** Converts readConcern / writeConcern / readPreference / timeoutMS of the test format. */
export function convertCommonOptions(opts = {}) {
    const out = {};
    for (const [key, value] of Object.entries(opts)) {
        if (key === 'readPreference') out.readPreference = toReadPreference(value);
        else out[key] = value;
    }
    return out;
}

function convertTransactionOptions(opts = {}) {
    return convertCommonOptions(opts);
}

export function convertSessionOptions(opts = {}) {
    const out = { ...opts };
    if (opts.defaultTransactionOptions) {
        out.defaultTransactionOptions = convertTransactionOptions(opts.defaultTransactionOptions);
    }
    return out;
}

export { convertTransactionOptions };

/** A client entity: the MongoClient plus the events it observed. */
export class ClientEntity {
    constructor(def, client) {
        this.id = def.id;
        this.client = client;
        this.observe = new Set(def.observeEvents ?? []);
        this.ignoreCommands = new Set((def.ignoreCommandMonitoringEvents ?? []).map((c) => c.toLowerCase()));
        this.observeSensitive = def.observeSensitiveCommands === true;
        this.events = [];
        this.recording = true;
        this.checkedOut = 0;
        this._ignoredRequests = new Set();
        this._attach();
    }

    _isIgnored(ev, started) {
        const name = String(ev.commandName).toLowerCase();
        if (name === 'configurefailpoint') return true;
        if (this.ignoreCommands.has(name)) return true;
        if (!this.observeSensitive) {
            if (SENSITIVE_COMMANDS.has(name)) return true;
            if ((name === 'hello' || name === 'ismaster') && started && ev.command?.speculativeAuthenticate) return true;
            if (!started && this._ignoredRequests.has(ev.requestId)) return true;
        }
        return false;
    }

    _attach() {
        for (const [driverName, type] of Object.entries(COMMAND_EVENTS)) {
            this.client.on(driverName, (ev) => {
                const started = type === 'commandStartedEvent';
                if (this._isIgnored(ev, started)) {
                    if (started) this._ignoredRequests.add(ev.requestId);
                    return;
                }
                if (!this.recording || !this.observe.has(type)) return;
                this.events.push({
                    type,
                    commandName: ev.commandName,
                    databaseName: ev.databaseName,
                    command: started ? snapshotOf(ev.command) : ev.command,
                    reply: ev.reply,
                    failure: ev.failure,
                    requestId: ev.requestId,
                    serviceId: ev.serviceId,
                    serverConnectionId: ev.serverConnectionId,
                });
            });
        }
        for (const [driverName, type] of Object.entries(CMAP_EVENTS)) {
            this.client.on(driverName, (ev) => {
                if (type === 'connectionCheckedOutEvent') this.checkedOut++;
                if (type === 'connectionCheckedInEvent') this.checkedOut--;
                if (!this.recording || !this.observe.has(type)) return;
                this.events.push({ type, ...ev });
            });
        }
    }

    commandStartedEvents() {
        return this.events.filter((e) => e.type === 'commandStartedEvent');
    }
}

export class EntityMap {
    /**
     * @param {object} config { uri, profile, clientDefaults } clientDefaults are URI options added
     *        to every client unless the test sets them (e.g. serverSelectionTimeoutMS).
     */
    constructor(config) {
        this.config = config;
        this.entities = new Map();
        this.lsids = new Map();
    }

    has(name) {
        return this.entities.has(name);
    }

    set(name, kind, value) {
        if (this.entities.has(name)) throw new Error(`entity ${name} is already defined`);
        this.entities.set(name, { kind, value });
    }

    get(name, kind) {
        const e = this.entities.get(name);
        if (!e) throw new Error(`entity ${name} is not defined`);
        if (kind && e.kind !== kind) throw new Error(`entity ${name} is a ${e.kind}, not a ${kind}`);
        return e.value;
    }

    kindOf(name) {
        return this.entities.get(name)?.kind;
    }

    // --- interface used by the matcher ---
    lookup(name) {
        const e = this.entities.get(name);
        if (!e) throw new Error(`entity ${name} is not defined`);
        return e.value;
    }

    sessionLsid(name) {
        const lsid = this.lsids.get(name);
        if (!lsid) throw new Error(`session entity ${name} is not defined`);
        return lsid;
    }

    clientEntities() {
        return [...this.entities.values()].filter((e) => e.kind === 'client').map((e) => e.value);
    }

    async create(defs) {
        for (const def of defs ?? []) {
            const kinds = Object.keys(def);
            if (kinds.length !== 1) throw new Error(`entity definition must have exactly one key: ${kinds}`);
            const kind = kinds[0];
            const spec = def[kind];
            switch (kind) {
                case 'client':
                    await this.createClient(spec);
                    break;
                case 'database': {
                    const c = this.get(spec.client, 'client');
                    const db = c.client.db(spec.databaseName, convertCommonOptions(spec.databaseOptions));
                    this.set(spec.id, 'database', db);
                    break;
                }
                case 'collection': {
                    const db = this.get(spec.database, 'database');
                    const coll = db.collection(spec.collectionName, convertCommonOptions(spec.collectionOptions));
                    this.set(spec.id, 'collection', coll);
                    break;
                }
                case 'session': {
                    const c = this.get(spec.client, 'client');
                    const opts = convertSessionOptions(spec.sessionOptions);
                    if (opts.snapshotTime !== undefined) opts.snapshotTime = this.lookup(opts.snapshotTime);
                    const session = c.client.startSession(opts);
                    // The pinned driver takes no `snapshotTime` option yet: the session starts
                    // at that time by the field it keeps the first snapshot read's time in.
                    if (opts.snapshotTime !== undefined && session.snapshotTime == null) {
                        session.snapshotTime = opts.snapshotTime;
                    }
                    this.set(spec.id, 'session', session);
                    this.lsids.set(spec.id, session.id);
                    break;
                }
                default:
                    throw new UnsupportedError(`entity type ${kind}`);
            }
        }
    }

    async createClient(spec) {
        for (const key of Object.keys(spec)) {
            if (!SUPPORTED_CLIENT_KEYS.has(key)) throw new UnsupportedError(`client option ${key}`);
        }
        if (spec.storeEventsAsEntities) throw new UnsupportedError('client option storeEventsAsEntities');
        for (const type of spec.observeEvents ?? []) {
            if (!COMMAND_EVENT_TYPES.has(type) && !CMAP_EVENT_TYPES.has(type)) {
                throw new UnsupportedError(`observeEvents type ${type}`);
            }
        }
        const uri = applyUriOptions(
            clientUri(this.config.uri, this.config.profile, spec.useMultipleMongoses),
            spec.uriOptions ?? {},
            this.config.clientDefaults ?? {}
        );
        const pkFactory = createQueuedPkFactory();
        const options = { monitorCommands: true, pkFactory };
        if (spec.serverApi) options.serverApi = spec.serverApi;
        const client = new MongoClient(uri, options);
        const entity = new ClientEntity(spec, client);
        entity.pkFactory = pkFactory;
        // Registered before connecting so a failed connect still gets closed at teardown.
        this.set(spec.id, 'client', entity);
        await client.connect();
        if (spec.awaitMinPoolSizeMS) await new Promise((r) => setTimeout(r, Math.min(spec.awaitMinPoolSizeMS, 1000)));
    }

    stopRecording() {
        for (const c of this.clientEntities()) c.recording = false;
    }

    async closeAll() {
        const all = [...this.entities.values()];
        for (const e of all) {
            if (e.kind === 'session') await e.value.endSession().catch(() => {});
        }
        for (const e of all) {
            if (e.kind === 'cursor' || e.kind === 'changeStream') await e.value.close().catch(() => {});
        }
        for (const e of all) {
            if (e.kind === 'client') await e.value.client.close(true).catch(() => {});
        }
        this.entities.clear();
    }
}
