import { QueryTargetError, type ResolvedConnection } from '../../shared/ports/QueryTarget.ts';

/**
 * Reading a resolved connection's fields. Values are only ever tested and used, never echoed: a
 * bad_connection message names the keys the connection has (canonical names, as resolved by the
 * route) and what is missing, so a secret typed into the wrong field does not come back in a 400.
 */
export class ConnectionParams {
  constructor(private readonly connection: ResolvedConnection) {}

  /** The keys with a value (null and empty strings count as absent). */
  found(): string[] {
    return Object.keys(this.connection.params).filter((key) => this.has(key));
  }

  has(name: string): boolean {
    const value = this.connection.params[name];
    return value !== undefined && value !== null && !(typeof value === 'string' && value.trim() === '');
  }

  /** A text field (a number is taken as its text); absent: undefined; any other kind: bad_connection. */
  text(name: string): string | undefined {
    if (!this.has(name)) return undefined;
    const value = this.connection.params[name];
    if (typeof value === 'string') return value.trim();
    if (typeof value === 'number' || typeof value === 'bigint') return String(value);
    throw this.bad(`its ${name} must be text`);
  }

  /** The raw value of a field that may be text or an object (credentials JSON). */
  raw(name: string): unknown {
    return this.has(name) ? this.connection.params[name] : undefined;
  }

  /** bad_connection unless every name has a value. */
  require(mode: string, names: ReadonlyArray<string>): void {
    const missing = names.filter((name) => !this.has(name));
    if (missing.length > 0) throw this.bad(`(${mode}) needs ${missing.join(', ')}`);
  }

  bad(what: string): QueryTargetError {
    const found = this.found();
    return new QueryTargetError(
      'bad_connection',
      `The ${this.connection.itemType} connection ${what}; the keys found are: ${found.length > 0 ? found.join(', ') : 'none'}`,
    );
  }
}
