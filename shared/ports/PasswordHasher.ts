/** Slow, salted password hashing; the adapter picks the algorithm (scrypt) and its cost. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, stored: string): Promise<boolean>;
}
