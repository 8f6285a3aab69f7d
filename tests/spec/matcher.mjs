// Matching rules of the unified test format ("Evaluating Matches"): extra keys allowed only in
// root-level documents, flexible numeric comparison, arrays of equal length, and the special
// $$ operators. `match` throws MatchError (an assertion failure) or UnsupportedError (the test
// uses something this runner does not implement); both make the test fail.
import { EJSON } from './driver.mjs';

export class MatchError extends Error {
    constructor(path, message) {
        super(`${path}: ${message}`);
        this.name = 'MatchError';
        this.path = path;
    }
}

export class UnsupportedError extends Error {
    constructor(message) {
        super(`unsupported: ${message}`);
        this.name = 'UnsupportedError';
    }
}

const NUMERIC_BSON = new Set(['Int32', 'Double', 'Long']);

export function isDocument(v) {
    return (
        v !== null &&
        typeof v === 'object' &&
        !Array.isArray(v) &&
        !v._bsontype &&
        !(v instanceof Date) &&
        !(v instanceof RegExp) &&
        !(v instanceof Uint8Array) &&
        !(v instanceof Map)
    );
}

export function isOperator(v) {
    if (!isDocument(v)) return false;
    const keys = Object.keys(v);
    return keys.length === 1 && keys[0].startsWith('$$');
}

function isNumeric(v) {
    return (
        typeof v === 'number' ||
        typeof v === 'bigint' ||
        (v !== null && typeof v === 'object' && NUMERIC_BSON.has(v._bsontype))
    );
}

// Returns a BigInt when the value is an exact integer, otherwise a Number.
function numericValue(v) {
    if (typeof v === 'bigint') return v;
    if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
    if (v._bsontype === 'Long') return BigInt(v.toString());
    const n = v.valueOf(); // Int32 / Double
    return Number.isInteger(n) ? BigInt(n) : n;
}

export function compareNumbers(a, b) {
    let x = numericValue(a);
    let y = numericValue(b);
    if (typeof x !== typeof y) {
        x = Number(x);
        y = Number(y);
    }
    if (typeof x === 'number' && Number.isNaN(x)) return Number.isNaN(y) ? 0 : NaN;
    if (x < y) return -1;
    if (x > y) return 1;
    return x === y ? 0 : NaN;
}

// Normalises driver values that stand for documents (Map, DBRef) into plain objects.
function normalizeActual(v) {
    if (v instanceof Map) return Object.fromEntries([...v.entries()].map(([k, x]) => [String(k), x]));
    if (v && v._bsontype === 'DBRef') {
        const d = { $ref: v.collection, $id: v.oid };
        if (v.db) d.$db = v.db;
        return Object.assign(d, v.fields ?? {});
    }
    return v;
}

export function describe(v) {
    if (v === undefined) return '(absent)';
    let s;
    try {
        s = EJSON.stringify(normalizeActual(v), { relaxed: true });
    } catch {
        s = String(v);
    }
    if (s === undefined) s = String(v);
    return s.length > 300 ? `${s.slice(0, 300)}...` : s;
}

// Names accepted by $$type for an actual value (numbers are matched leniently because the driver
// promotes int32/int64/double to JS numbers).
export function typeNames(v) {
    if (v === undefined) return [];
    if (v === null) return ['null'];
    switch (typeof v) {
        case 'string':
            return ['string'];
        case 'boolean':
            return ['bool'];
        case 'bigint':
            return ['long', 'number'];
        case 'number':
            return Number.isInteger(v) ? ['int', 'long', 'double', 'number'] : ['double', 'number'];
        default:
            break;
    }
    if (Array.isArray(v)) return ['array'];
    if (v instanceof Date) return ['date'];
    if (v instanceof RegExp) return ['regex'];
    if (v instanceof Uint8Array) return ['binData'];
    if (v instanceof Map) return ['object'];
    switch (v._bsontype) {
        case undefined:
            return ['object'];
        case 'Int32':
            return ['int', 'number'];
        case 'Long':
            return ['long', 'number'];
        case 'Double':
            return ['double', 'number'];
        case 'Decimal128':
            return ['decimal', 'number'];
        case 'ObjectId':
        case 'ObjectID':
            return ['objectId'];
        case 'Binary':
            return ['binData'];
        case 'Timestamp':
            return ['timestamp'];
        case 'BSONRegExp':
            return ['regex'];
        case 'MinKey':
            return ['minKey'];
        case 'MaxKey':
            return ['maxKey'];
        case 'Code':
            return v.scope ? ['javascriptWithScope'] : ['javascript'];
        case 'BSONSymbol':
        case 'Symbol':
            return ['symbol'];
        case 'DBRef':
            return ['object'];
        case 'DBPointer':
            return ['dbPointer'];
        default:
            return [String(v._bsontype)];
    }
}

function regexParts(v) {
    if (v instanceof RegExp) return [v.source, [...v.flags].sort().join('')];
    return [v.pattern, [...(v.options ?? '')].sort().join('')];
}

function scalarEqual(exp, act) {
    if (isNumeric(exp)) return isNumeric(act) && compareNumbers(exp, act) === 0;
    if (exp === null) return act === null;
    if (typeof exp !== 'object') return exp === act;
    if (act === null || typeof act !== 'object') return false;
    if (exp instanceof Date) return act instanceof Date && exp.getTime() === act.getTime();
    const expIsRegex = exp instanceof RegExp || exp._bsontype === 'BSONRegExp';
    const actIsRegex = act instanceof RegExp || act._bsontype === 'BSONRegExp';
    if (expIsRegex || actIsRegex) {
        if (!(expIsRegex && actIsRegex)) return false;
        const [p1, f1] = regexParts(exp);
        const [p2, f2] = regexParts(act);
        return p1 === p2 && f1 === f2;
    }
    if (exp._bsontype !== act._bsontype) {
        const bin = (x) => x instanceof Uint8Array || x._bsontype === 'Binary';
        if (!(bin(exp) && bin(act))) return false;
    }
    return EJSON.stringify(exp, { relaxed: false }) === EJSON.stringify(act, { relaxed: false });
}

function hasKey(doc, key) {
    return Object.prototype.hasOwnProperty.call(doc, key) && doc[key] !== undefined;
}

function toHex(v) {
    if (typeof v === 'string') return Buffer.from(v, 'latin1').toString('hex');
    if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
    if (v && v._bsontype === 'Binary') return Buffer.from(v.buffer.subarray(0, v.position ?? v.buffer.length)).toString('hex');
    return null;
}

class Matcher {
    constructor(entities) {
        this.entities = entities;
    }

    value(exp, act, path, isRoot, rootElements) {
        if (isOperator(exp)) return this.operator(exp, act, path, isRoot, rootElements);
        if (isDocument(exp)) return this.document(exp, act, path, isRoot);
        if (Array.isArray(exp)) {
            if (!Array.isArray(act)) throw new MatchError(path, `expected an array, got ${describe(act)}`);
            if (exp.length !== act.length) {
                throw new MatchError(
                    path,
                    `expected ${exp.length} element(s), got ${act.length}: ${describe(act)}`
                );
            }
            exp.forEach((e, i) => this.value(e, act[i], `${path}[${i}]`, rootElements, false));
            return;
        }
        if (act === undefined) throw new MatchError(path, `expected ${describe(exp)}, got nothing`);
        if (!scalarEqual(exp, act)) {
            throw new MatchError(path, `expected ${describe(exp)}, got ${describe(act)}`);
        }
    }

    document(exp, act, path, isRoot) {
        act = normalizeActual(act);
        if (!isDocument(act)) throw new MatchError(path, `expected a document, got ${describe(act)}`);
        for (const key of Object.keys(exp)) {
            const ev = exp[key];
            const p = `${path}.${key}`;
            if (isOperator(ev)) {
                const op = Object.keys(ev)[0];
                if (op === '$$exists') {
                    const present = hasKey(act, key);
                    if (Boolean(ev.$$exists) !== present) {
                        throw new MatchError(
                            p,
                            present ? `expected no field, got ${describe(act[key])}` : 'expected the field to exist'
                        );
                    }
                    continue;
                }
                if (op === '$$unsetOrMatches') {
                    if (!hasKey(act, key)) continue;
                    this.value(ev.$$unsetOrMatches, act[key], p, false, false);
                    continue;
                }
            }
            if (!hasKey(act, key)) {
                throw new MatchError(p, `missing field (expected ${describe(ev)})`);
            }
            this.value(ev, act[key], p, false, false);
        }
        if (!isRoot) {
            const extra = Object.keys(act).filter((k) => act[k] !== undefined && !hasKey(exp, k));
            if (extra.length > 0) {
                throw new MatchError(path, `unexpected field(s) ${extra.join(', ')} in ${describe(act)}`);
            }
        }
    }

    operator(exp, act, path, isRoot, rootElements) {
        const op = Object.keys(exp)[0];
        const arg = exp[op];
        switch (op) {
            case '$$unsetOrMatches':
                if (act === undefined) return;
                return this.value(arg, act, path, isRoot, rootElements);
            case '$$exists':
                throw new MatchError(path, '$$exists is only valid as the value of a field');
            case '$$type': {
                const wanted = Array.isArray(arg) ? arg : [arg];
                const names = typeNames(act);
                if (act === undefined) throw new MatchError(path, `expected type ${wanted.join('|')}, got nothing`);
                if (!wanted.some((t) => names.includes(t))) {
                    throw new MatchError(path, `expected type ${wanted.join('|')}, got ${names.join('/')} ${describe(act)}`);
                }
                return;
            }
            case '$$matchesEntity': {
                const entity = this.lookupEntity(arg);
                return this.value(entity, act, path, isRoot, rootElements);
            }
            case '$$matchesHexBytes': {
                if (typeof arg !== 'string' || !/^([0-9a-fA-F]{2})*$/.test(arg)) {
                    throw new UnsupportedError(`malformed $$matchesHexBytes ${describe(arg)}`);
                }
                const hex = toHex(act);
                if (hex === null || hex !== arg.toLowerCase()) {
                    throw new MatchError(path, `expected bytes ${arg}, got ${describe(act)}`);
                }
                return;
            }
            case '$$sessionLsid': {
                if (!this.entities || typeof this.entities.sessionLsid !== 'function') {
                    throw new UnsupportedError('$$sessionLsid without an entity map');
                }
                const lsid = this.entities.sessionLsid(arg);
                if (act === undefined) throw new MatchError(path, `expected lsid of ${arg}, got nothing`);
                return this.value(lsid, act, path, false, false);
            }
            case '$$lte':
                if (!isNumeric(act) || !isNumeric(arg)) {
                    throw new MatchError(path, `$$lte needs numbers, got ${describe(act)}`);
                }
                if (!(compareNumbers(act, arg) <= 0)) {
                    throw new MatchError(path, `expected <= ${describe(arg)}, got ${describe(act)}`);
                }
                return;
            case '$$matchAsDocument': {
                if (typeof act !== 'string') throw new MatchError(path, `expected an EJSON string, got ${describe(act)}`);
                let parsed;
                try {
                    parsed = EJSON.parse(act, { relaxed: true });
                } catch (err) {
                    throw new MatchError(path, `cannot parse as EJSON: ${err.message}`);
                }
                return this.value(arg, parsed, path, false, false);
            }
            case '$$matchAsRoot':
                return this.value(arg, act, path, true, false);
            default:
                throw new UnsupportedError(`special operator ${op}`);
        }
    }

    lookupEntity(name) {
        if (!this.entities || typeof this.entities.lookup !== 'function') {
            throw new UnsupportedError(`entity reference ${name} without an entity map`);
        }
        return this.entities.lookup(name);
    }
}

/**
 * Asserts that `actual` matches `expected`.
 * options.root: treat a top-level document as root-level (extra keys allowed). Default true.
 * options.rootElements: a top-level array holds root-level documents (find/aggregate results).
 * options.entities: { lookup(name), sessionLsid(name) } for $$matchesEntity / $$sessionLsid.
 */
export function match(expected, actual, options = {}) {
    const { root = true, rootElements = false, entities = null, path = '$' } = options;
    new Matcher(entities).value(expected, actual, path, root, rootElements);
}

/** Exact comparison for outcome data: no extra fields anywhere, key order ignored. */
export function matchExact(expected, actual, path = '$') {
    new Matcher(null).value(expected, actual, path, false, false);
}

/** Like match() but returns null on success or the failure message. */
export function matchResult(expected, actual, options = {}) {
    try {
        match(expected, actual, options);
        return null;
    } catch (err) {
        if (err instanceof MatchError || err instanceof UnsupportedError) return err.message;
        throw err;
    }
}
