/**
 * A text with the password of every `scheme://user:password@` in it masked: the client's parse
 * errors quote the whole connection string, and EVENTSTORE_URL may carry credentials.
 */
export const maskCredentials = (text: string): string => text.replace(/(\/\/[^:@/\s]+):[^@\s]*@/g, '$1:***@');
