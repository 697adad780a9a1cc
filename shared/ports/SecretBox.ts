/** Encrypted form of a secret as it is stored in events: never the plaintext. */
export interface Sealed {
  v: 1;
  iv: string;
  tag: string;
  ct: string;
}

/** Encrypts secrets with the deployment key before they reach the event log. */
export interface SecretBox {
  seal(plaintext: string): Sealed;
  open(sealed: Sealed): string;
}
