import { createServer, type Server, type Socket } from 'node:net';

/**
 * A PostgreSQL server as an attacker would write one, for the query endpoint's specs: it speaks
 * just enough of protocol 3 for pg (startup, the extended query of pg-cursor, close, sync) and then
 * sends what a real server would not, to see that the service fails the request and not the process.
 *  - `huge-row`: one text column whose single value is `valueBytes` bytes (streamed, never built);
 *  - `bad-json`: one json column whose value is `{` (pg's json parser throws on it);
 *  - `bad-auth`: an authentication request of a kind pg does not know (pg's protocol parser throws);
 *  - `huge-parameter`: a ParameterStatus of 2 MiB right after authentication.
 */
export type HostileBehaviour = { kind: 'huge-row'; valueBytes: number } | { kind: 'bad-json' } | { kind: 'bad-auth' } | { kind: 'huge-parameter' };

const message = (type: string, body: Buffer = Buffer.alloc(0)): Buffer => {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
};
const int32 = (value: number): Buffer => {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32BE(value);
  return bytes;
};
const int16 = (value: number): Buffer => {
  const bytes = Buffer.alloc(2);
  bytes.writeInt16BE(value);
  return bytes;
};
const cstring = (text: string): Buffer => Buffer.from(`${text}\0`, 'utf8');
const parameter = (name: string, value: string): Buffer => message('S', Buffer.concat([cstring(name), cstring(value)]));
const rowDescription = (name: string, typeOid: number): Buffer =>
  message('T', Buffer.concat([int16(1), cstring(name), int32(0), int16(0), int32(typeOid), int16(-1), int32(-1), int16(0)]));

/** Writes `total` bytes of 'x' in 1 MiB pieces, waiting for the socket to drain: nothing of that size is ever held. */
const streamValue = async (socket: Socket, total: number): Promise<void> => {
  const piece = Buffer.alloc(1024 * 1024, 0x78);
  let left = total;
  while (left > 0 && !socket.destroyed) {
    const size = Math.min(piece.length, left);
    left -= size;
    if (!socket.write(size === piece.length ? piece : piece.subarray(0, size))) {
      await new Promise<void>((resolve) => {
        const done = () => {
          socket.off('drain', done);
          socket.off('close', done);
          resolve();
        };
        socket.on('drain', done);
        socket.on('close', done);
      });
    }
  }
};

const serve = (socket: Socket, behaviour: HostileBehaviour): void => {
  socket.on('error', () => undefined);
  let buffered = Buffer.alloc(0);
  let started = false;
  const send = (...messages: Buffer[]) => {
    if (!socket.destroyed) socket.write(Buffer.concat(messages));
  };
  const onStartup = () => {
    if (behaviour.kind === 'bad-auth') return send(message('R', int32(99)));
    const ready = [
      message('R', int32(0)),
      parameter('default_transaction_read_only', 'on'),
      parameter('standard_conforming_strings', 'on'),
      parameter('client_encoding', 'UTF8'),
      message('K', Buffer.concat([int32(4242), int32(1)])),
      message('Z', Buffer.from('I')),
    ];
    if (behaviour.kind === 'huge-parameter') ready.splice(1, 0, parameter('application_name', 'x'.repeat(2 * 1024 * 1024)));
    send(...ready);
  };
  const onMessage = async (type: string) => {
    if (type === 'D') {
      // Describe of the cursor's portal (after Parse and Bind).
      send(message('1'), message('2'), behaviour.kind === 'bad-json' ? rowDescription('j', 114) : rowDescription('v', 25));
    } else if (type === 'E') {
      if (behaviour.kind === 'bad-json') {
        send(message('D', Buffer.concat([int16(1), int32(1), Buffer.from('{')])), message('C', cstring('SELECT 1')));
      } else if (behaviour.kind === 'huge-row') {
        const header = Buffer.concat([Buffer.from('D'), int32(4 + 2 + 4 + behaviour.valueBytes), int16(1), int32(behaviour.valueBytes)]);
        send(header);
        await streamValue(socket, behaviour.valueBytes);
        send(message('C', cstring('SELECT 1')));
      }
    } else if (type === 'C') {
      send(message('3'));
    } else if (type === 'S') {
      send(message('Z', Buffer.from('I')));
    } else if (type === 'X') {
      socket.end();
    }
  };
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (;;) {
      if (!started) {
        if (buffered.length < 4) return;
        const length = buffered.readInt32BE(0);
        if (buffered.length < length) return;
        buffered = buffered.subarray(length);
        started = true;
        onStartup();
        continue;
      }
      if (buffered.length < 5) return;
      const length = buffered.readInt32BE(1);
      if (buffered.length < 1 + length) return;
      const type = String.fromCharCode(buffered[0] as number);
      buffered = buffered.subarray(1 + length);
      void onMessage(type);
    }
  });
};

export const hostilePostgres = async (behaviour: HostileBehaviour): Promise<{ port: number; close(): Promise<void> }> => {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serve(socket, behaviour);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
