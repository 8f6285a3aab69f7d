// runOnRequirements evaluated against a pinned profile (never against what the server reports),
// plus schemaVersion compatibility.
import { UnsupportedError } from './matcher.mjs';

export const PROFILES = {
    'single-8.0': {
        name: 'single-8.0',
        topology: 'single',
        serverVersion: '8.0.0',
        auth: false,
        serverless: false,
        csfle: false,
        shardsAreReplicaSets: false,
        serverParameters: {},
        initialDataWriteConcern: null,
    },
    // `tessera serve --replSet NAME`: the primary of a one-member replica set.
    'replicaset-8.0': {
        name: 'replicaset-8.0',
        topology: 'replicaset',
        serverVersion: '8.0.0',
        auth: false,
        serverless: false,
        csfle: false,
        shardsAreReplicaSets: false,
        serverParameters: {},
        initialDataWriteConcern: { w: 'majority' },
    },
    'sharded-8.0': {
        name: 'sharded-8.0',
        topology: 'sharded',
        serverVersion: '8.0.0',
        auth: false,
        serverless: false,
        csfle: false,
        // Since 3.6 every shard is a replica set, so "sharded-replicaset" matches too.
        shardsAreReplicaSets: true,
        serverParameters: {},
        initialDataWriteConcern: { w: 'majority' },
    },
};

export const SUPPORTED_SCHEMA = '1.21';

export function parseVersion(s) {
    if (typeof s !== 'string' || !/^\d+(\.\d+){0,2}([-+].*)?$/.test(s)) {
        throw new UnsupportedError(`malformed version string ${JSON.stringify(s)}`);
    }
    const parts = s.split(/[-+]/)[0].split('.').map(Number);
    while (parts.length < 3) parts.push(0);
    return parts;
}

export function compareVersions(a, b) {
    const x = parseVersion(a);
    const y = parseVersion(b);
    for (let i = 0; i < 3; i++) {
        if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
    }
    return 0;
}

/** Returns null when the file's schema version can be processed, else the reason. */
export function schemaProblem(schemaVersion) {
    let v;
    try {
        v = parseVersion(String(schemaVersion));
    } catch {
        return `malformed schemaVersion ${JSON.stringify(schemaVersion)}`;
    }
    const max = parseVersion(SUPPORTED_SCHEMA);
    if (v[0] !== max[0] || compareVersions(String(schemaVersion), SUPPORTED_SCHEMA) > 0) {
        return `schemaVersion ${schemaVersion} is newer than the supported ${SUPPORTED_SCHEMA}`;
    }
    return null;
}

function flexEqual(a, b) {
    if (typeof a === 'number' || typeof b === 'number') return Number(a) === Number(b);
    return JSON.stringify(a) === JSON.stringify(b);
}

/** Returns null when one runOnRequirement is satisfied by the profile, else why not. */
export function requirementMismatch(req, profile) {
    for (const [key, value] of Object.entries(req)) {
        switch (key) {
            case 'minServerVersion':
                if (compareVersions(profile.serverVersion, value) < 0) return `server ${profile.serverVersion} < ${value}`;
                break;
            case 'maxServerVersion':
                if (compareVersions(profile.serverVersion, value) > 0) return `server ${profile.serverVersion} > ${value}`;
                break;
            case 'topologies': {
                const ok = value.some(
                    (t) =>
                        t === profile.topology ||
                        (t === 'sharded-replicaset' && profile.topology === 'sharded' && profile.shardsAreReplicaSets)
                );
                if (!ok) return `topology ${profile.topology} not in ${value.join(',')}`;
                break;
            }
            case 'serverless':
                if (value === 'require' && !profile.serverless) return 'requires serverless';
                if (value === 'forbid' && profile.serverless) return 'forbids serverless';
                break;
            case 'auth':
                if (Boolean(value) !== Boolean(profile.auth)) return value ? 'requires auth' : 'forbids auth';
                break;
            case 'authMechanism':
                return `requires auth mechanism ${value}`;
            case 'csfle':
                if (value !== false && !profile.csfle) return 'requires CSFLE';
                if (value === false && profile.csfle) return 'forbids CSFLE';
                break;
            case 'serverParameters':
                for (const [param, want] of Object.entries(value)) {
                    if (!(param in profile.serverParameters)) return `server parameter ${param} not defined by profile`;
                    if (!flexEqual(profile.serverParameters[param], want)) return `server parameter ${param} differs`;
                }
                break;
            default:
                throw new UnsupportedError(`runOnRequirement key ${key}`);
        }
    }
    return null;
}

/** Returns null if `reqs` (array or undefined) is satisfied, else a reason string. */
export function requirementsMismatch(reqs, profile) {
    if (reqs === undefined) return null;
    const reasons = [];
    for (const req of reqs) {
        const why = requirementMismatch(req, profile);
        if (why === null) return null;
        reasons.push(why);
    }
    return reasons.join(' / ') || 'empty runOnRequirements';
}
