/** A bus option that must be an integer >= `min` (or Infinity where `infinite` allows it), else a RangeError naming it. */
export const integerOption = (name: string, value: number, min: number, infinite = false): number => {
  const valid = (infinite && value === Number.POSITIVE_INFINITY) || (Number.isInteger(value) && value >= min);
  if (!valid) throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
  return value;
};
