// Schemas shared by the application-database tests.

export const SHOP = {
  tables: {
    customers: {
      columns: {
        email: { type: 'text', unique: true },
        name: { type: 'text', nullable: true },
        vip: { type: 'boolean', default: false },
        meta: { type: 'json', nullable: true },
      },
    },
    orders: {
      columns: {
        customer: { type: 'uuid', references: { table: 'customers', column: '_id' } },
        total: { type: 'number' },
        qty: { type: 'integer', default: 1 },
        placed: { type: 'timestamp', nullable: true },
      },
      indexes: [{ columns: ['customer'] }],
    },
  },
};
