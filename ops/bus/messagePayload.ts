/**
 * A published value as every bus carries it: JSON text, made at publish as Kafka's producer does,
 * so a key that is not a string or a value that is not JSON fails the publisher, not a consumer.
 */
export const messagePayload = (topic: string, key: string, value: unknown): string => {
  if (typeof key !== 'string') throw new TypeError('A message key must be a string');
  const payload: string | undefined = JSON.stringify(value);
  if (payload === undefined) throw new TypeError(`The value published on ${topic} is not JSON`);
  return payload;
};
