/** Exhaustive switch guard: a new union member without a case fails to compile here. */
export const assertNever = (value: never): never => {
  throw new Error(`Unhandled case: ${JSON.stringify(value)}`);
};
