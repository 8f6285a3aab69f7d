// Self-tests of the list-append checker (no server): each anomaly it must find, in the smallest
// history that has it, and a serializable history in which it finds none.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkListAppend } from './list_append_checker.mjs';

const append = (key, value) => ({ f: 'append', key, value });
const read = (key, value) => ({ f: 'read', key, value });
const txn = (id, ops, status = 'ok') => ({ id, status, ops });
const types = (r) => r.anomalies.map((a) => a.type).sort();

describe('list-append checker', () => {
    test('a serial history has no anomaly, and its edges are found', () => {
        const h = [
            txn(1, [append('x', 1), read('x', [1])]),
            txn(2, [read('x', [1]), append('x', 2), append('y', 3)]),
            txn(3, [read('y', []), read('x', [1, 2])]),
        ];
        // T3 read y empty before T2's append: rw T3 -> T2, and wr T2 -> T3 via x: that is read
        // skew unless... it is: T3 saw T2's x but not its y.
        const r = checkListAppend(h, new Map([['x', [1, 2]], ['y', [3]]]));
        assert.deepEqual(types(r), ['G-single']);
        const serial = [h[0], h[1], txn(3, [read('y', [3]), read('x', [1, 2])])];
        const ok = checkListAppend(serial, new Map([['x', [1, 2]], ['y', [3]]]));
        assert.deepEqual(ok.anomalies, []);
        assert.equal(ok.committed, 3);
        assert.ok(ok.edges.ww >= 1 && ok.edges.wr >= 2, JSON.stringify(ok.edges));
    });

    test('G0: two transactions whose appends interleave in opposite orders on two keys', () => {
        const h = [txn(1, [append('x', 1), append('y', 2)]), txn(2, [append('x', 3), append('y', 4)])];
        assert.deepEqual(types(checkListAppend(h, new Map([['x', [1, 3]], ['y', [4, 2]]]))), ['G0']);
    });

    test('G1c: each transaction reads the other one\'s append', () => {
        const h = [txn(1, [append('x', 1), read('y', [2])]), txn(2, [append('y', 2), read('x', [1])])];
        assert.deepEqual(types(checkListAppend(h, new Map([['x', [1]], ['y', [2]]]))), ['G1c']);
    });

    test('write skew (G2) is allowed under snapshot isolation', () => {
        const h = [txn(1, [read('y', []), append('x', 1)]), txn(2, [read('x', []), append('y', 2)])];
        assert.deepEqual(checkListAppend(h, new Map([['x', [1]], ['y', [2]]])).anomalies, []);
    });

    test('G1a, a lost append, a partial commit, a read that is not a prefix, a duplicate', () => {
        const aborted = checkListAppend(
            [txn(1, [append('x', 1)], 'aborted'), txn(2, [read('x', [1])])],
            new Map([['x', []]]),
        );
        assert.ok(types(aborted).includes('G1a'), JSON.stringify(aborted.anomalies));
        assert.deepEqual(types(checkListAppend([txn(1, [append('x', 1)])], new Map([['x', []]]))), ['lost-append']);
        assert.deepEqual(
            types(checkListAppend([txn(1, [append('x', 1), append('y', 2)], 'unknown')], new Map([['x', [1]], ['y', []]]))),
            ['lost-append', 'partial-commit'], // its visible append makes it committed, missing the other
        );
        assert.deepEqual(
            types(checkListAppend([txn(1, [append('x', 1)]), txn(2, [append('x', 2)]), txn(3, [read('x', [2])])], new Map([['x', [1, 2]]]))),
            ['incompatible-order'],
        );
        assert.deepEqual(types(checkListAppend([txn(1, [append('x', 1)])], new Map([['x', [1, 1]]]))), ['duplicate']);
    });
});
