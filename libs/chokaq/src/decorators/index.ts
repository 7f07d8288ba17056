export * from './job-definition';
export * from './job-handler.decorator';
export * from './recurring-job.decorator';
export * from './on-job-event.decorator';
