import { logLevel, type logCreator } from 'kafkajs';
import type { Logger } from '../../../shared/ports/Logger.ts';

/**
 * kafkajs's log lines into the service's log (category CELERY, the bus's). kafkajs logs every
 * error response of the broker at ERROR, also those its caller expects and handles: a topic that
 * already exists when it is created, a heartbeat answered "rebalancing" (several per rebalance),
 * a metadata read of a missing topic. Those are kept at info, with the broker's error text (so is
 * kafkajs's warning about the domain-events producer's bounded retries, a choice made there); a
 * failure that matters reaches the caller as an exception, which is logged where it is handled.
 */
export const kafkaLogCreator =
  (logger: Logger | undefined): logCreator =>
  () =>
  ({ level, namespace, log }) => {
    if (!logger) return;
    const handledResponse = namespace === 'Connection' && log.message.startsWith('Response ');
    // The domain-events producer bounds its retries on purpose (DomainEventPublisher): said once per start.
    const chosen = log.message.startsWith('Limiting retries for the idempotent producer');
    const severity = level === logLevel.ERROR && !handledResponse ? 'error' : level === logLevel.WARN && !chosen ? 'warning' : 'info';
    const detail = typeof log.error === 'string' && log.error.length > 0 ? ` (${log.error})` : '';
    logger.log({ level: severity, category: 'CELERY', message: `kafka ${namespace}: ${log.message}${detail}` });
  };
