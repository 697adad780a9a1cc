/**
 * The Kafka domain-events publisher's checkpoint, a file in DATA_DIR. Its own module so that the
 * backup (ops/backup) names the same file without loading the Kafka client.
 */
export const PUBLISH_CHECKPOINT_FILE = 'domain-events.checkpoint';
