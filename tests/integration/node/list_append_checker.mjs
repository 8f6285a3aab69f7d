// A checker for list-append histories (after Jepsen's Elle): transactions append unique values
// to lists and read whole lists; since every value is unique and a list only grows, a read names
// exactly which appends it saw, and the final lists give each key's version order. From those,
// the dependencies between committed transactions:
//   ww  T1 appended the element just before T2's in a key's final list;
//   wr  T2 read a list whose last element (not its own) T1 appended;
//   rw  T1 read a list of length p, T2 appended the element at position p (T1 missed it).
// Snapshot isolation forbids G0 (a ww cycle), G1c (a cycle of ww and wr edges) and G-single
// (read skew: a cycle with exactly one rw edge); it allows G2 (two or more rw edges: write
// skew). It also forbids reading an aborted transaction's append (G1a), a read that is not a
// prefix of the key's final list, a value appended twice, and a transaction whose appends are
// only partly visible.
//
// history: [{ id, status: 'ok' | 'aborted' | 'unknown', ops: [{ f: 'append', key, value } |
//            { f: 'read', key, value: [...] }] }]   (values unique across the history)
// final:   Map key -> the list read after every transaction ended.
// Returns { anomalies: [{ type, ... }], edges: { ww, wr, rw }, committed }.

export function checkListAppend(history, final) {
    const anomalies = [];
    const appender = new Map(); // value -> txn
    for (const t of history) {
        for (const op of t.ops) {
            if (op.f !== 'append') continue;
            if (appender.has(op.value)) throw new Error(`value ${op.value} appended twice in the history`);
            appender.set(op.value, t);
        }
    }
    // An unknown outcome is decided by the final lists: all of its appends, or none.
    const committed = new Set(history.filter((t) => t.status === 'ok'));
    const finalValues = new Set([...final.values()].flat());
    for (const t of history.filter((x) => x.status === 'unknown')) {
        const appends = t.ops.filter((op) => op.f === 'append');
        const seen = appends.filter((op) => finalValues.has(op.value)).length;
        if (seen > 0 && seen < appends.length) anomalies.push({ type: 'partial-commit', txn: t.id, seen, of: appends.length });
        if (seen > 0) committed.add(t);
    }
    for (const t of committed) {
        for (const op of t.ops) {
            if (op.f === 'append' && !finalValues.has(op.value)) {
                anomalies.push({ type: 'lost-append', txn: t.id, key: op.key, value: op.value });
            }
        }
    }
    // The final lists: only committed appends, each once.
    const position = new Map(); // key -> Map(value -> index)
    for (const [key, list] of final) {
        const at = new Map();
        list.forEach((v, i) => {
            if (at.has(v)) anomalies.push({ type: 'duplicate', key, value: v });
            at.set(v, i);
            const t = appender.get(v);
            if (!t) anomalies.push({ type: 'garbage', key, value: v });
            else if (!committed.has(t)) anomalies.push({ type: 'G1a', key, value: v, txn: t.id, reader: 'final' });
        });
        position.set(key, at);
    }

    const edges = { ww: 0, wr: 0, rw: 0 };
    const out = new Map([...committed].map((t) => [t, []])); // t -> [{ to, kind }]
    const add = (from, to, kind) => {
        if (from === to || !committed.has(from) || !committed.has(to)) return;
        out.get(from).push({ to, kind });
        edges[kind]++;
    };
    for (const [, list] of final) {
        for (let i = 0; i + 1 < list.length; i++) add(appender.get(list[i]), appender.get(list[i + 1]), 'ww');
    }
    for (const t of committed) {
        const own = new Set(t.ops.filter((op) => op.f === 'append').map((op) => op.value));
        for (const op of t.ops) {
            if (op.f !== 'read') continue;
            const list = final.get(op.key) ?? [];
            // Its own appends end the read: what others wrote is the rest.
            let seen = op.value;
            while (seen.length > 0 && own.has(seen[seen.length - 1])) seen = seen.slice(0, -1);
            for (const v of op.value) {
                const w = appender.get(v);
                if (w && w.status === 'aborted' && !committed.has(w)) anomalies.push({ type: 'G1a', key: op.key, value: v, txn: w.id, reader: t.id });
            }
            const isPrefix = op.value.length <= list.length && op.value.every((v, i) => list[i] === v);
            if (!isPrefix) {
                anomalies.push({ type: 'incompatible-order', key: op.key, reader: t.id, read: op.value, final: list });
                continue;
            }
            if (seen.length > 0) add(appender.get(seen[seen.length - 1]), t, 'wr');
            if (seen.length < list.length) add(t, appender.get(list[seen.length]), 'rw');
        }
    }

    // G0 and G1c: a cycle of ww and wr edges (strongly connected components, Tarjan).
    for (const scc of stronglyConnected([...committed], (t) => out.get(t).filter((e) => e.kind !== 'rw').map((e) => e.to))) {
        if (scc.length > 1) {
            const onlyWw = scc.every((t) => out.get(t).every((e) => e.kind === 'ww' || !scc.includes(e.to)));
            anomalies.push({ type: onlyWw ? 'G0' : 'G1c', txns: scc.map((t) => t.id) });
        }
    }
    // G-single: an rw edge a -> b closed by ww/wr edges from b back to a.
    for (const a of committed) {
        for (const e of out.get(a)) {
            if (e.kind !== 'rw') continue;
            if (reaches(e.to, a, (t) => out.get(t).filter((x) => x.kind !== 'rw').map((x) => x.to))) {
                anomalies.push({ type: 'G-single', txns: [a.id, e.to.id] });
            }
        }
    }
    return { anomalies, edges, committed: committed.size };
}

function reaches(from, to, next) {
    const seen = new Set([from]);
    const stack = [from];
    while (stack.length > 0) {
        const t = stack.pop();
        if (t === to) return true;
        for (const n of next(t)) {
            if (!seen.has(n)) {
                seen.add(n);
                stack.push(n);
            }
        }
    }
    return false;
}

function stronglyConnected(nodes, next) {
    let index = 0;
    const idx = new Map();
    const low = new Map();
    const onStack = new Set();
    const stack = [];
    const out = [];
    for (const root of nodes) {
        if (idx.has(root)) continue;
        // Iterative Tarjan: frames of (node, its successors, the next one to visit).
        const frames = [{ v: root, succ: next(root), i: 0 }];
        idx.set(root, index);
        low.set(root, index++);
        stack.push(root);
        onStack.add(root);
        while (frames.length > 0) {
            const f = frames[frames.length - 1];
            if (f.i < f.succ.length) {
                const w = f.succ[f.i++];
                if (!idx.has(w)) {
                    idx.set(w, index);
                    low.set(w, index++);
                    stack.push(w);
                    onStack.add(w);
                    frames.push({ v: w, succ: next(w), i: 0 });
                } else if (onStack.has(w)) {
                    low.set(f.v, Math.min(low.get(f.v), idx.get(w)));
                }
                continue;
            }
            frames.pop();
            if (frames.length > 0) {
                const parent = frames[frames.length - 1].v;
                low.set(parent, Math.min(low.get(parent), low.get(f.v)));
            }
            if (low.get(f.v) === idx.get(f.v)) {
                const scc = [];
                let w;
                do {
                    w = stack.pop();
                    onStack.delete(w);
                    scc.push(w);
                } while (w !== f.v);
                out.push(scc);
            }
        }
    }
    return out;
}
