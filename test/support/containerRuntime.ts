/**
 * Why no container runtime can start a testcontainers service here, or null when one is reachable:
 * the one probe of the suites that fall back to, or only run under, testcontainers (KurrentDB,
 * MongoDB, Kafka without TEST_KAFKA_BROKERS).
 */
export const containerRuntimeProblem = async (): Promise<string | null> => {
  const { getContainerRuntimeClient } = await import('testcontainers');
  try {
    await getContainerRuntimeClient();
    return null;
  } catch (error) {
    return `no container runtime is reachable (${error instanceof Error ? error.message : String(error)})`;
  }
};
