import { MongoServerError, type MongoClient } from 'mongodb';

const COMMAND_NOT_FOUND = 59;

/**
 * Whether the deployment runs multi-document transactions: a replica set member (it names its
 * set) or a mongos. A standalone server does not. `hello` is the handshake since 4.4; a server
 * that lacks it (the test double) answers the legacy `isMaster`.
 */
export const supportsTransactions = async (client: MongoClient): Promise<boolean> => {
  const admin = client.db('admin');
  let reply;
  try {
    reply = await admin.command({ hello: 1 });
  } catch (error) {
    if (!(error instanceof MongoServerError) || error.code !== COMMAND_NOT_FOUND) throw error;
    reply = await admin.command({ isMaster: 1 });
  }
  return typeof reply.setName === 'string' || reply.msg === 'isdbgrid';
};
