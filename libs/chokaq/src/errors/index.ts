export * from './chokaq.error';
export * from './validation.error';
export * from './storage-unavailable.error';
export * from './transaction.error';
