// The seed's orders collection: one order of ≈ 340 BSON bytes per integer _id, shared by the
// migration and balancer benchmarks so that both move the same documents.

const STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'returned'];

/** Order number i (deterministic: the same i gives the same document). */
export function order(i) {
    return {
        _id: i,
        customerId: `cust-${(i * 7919) % 100000}`,
        status: STATUSES[i % 5],
        total: Math.round(((i * 31) % 100000) / 10) / 10,
        currency: 'EUR',
        createdAt: new Date(1700000000000 + i * 1000),
        shipping: { street: `${i % 977} Main Street`, city: 'Springfield', zip: `${10000 + (i % 89999)}`, country: 'US' },
        items: [
            { sku: `sku-${i % 5000}`, qty: 1 + (i % 3), price: 19.99 },
            { sku: `sku-${(i * 3) % 5000}`, qty: 1, price: 5.49 },
        ],
        note: 'x'.repeat(12),
    };
}
