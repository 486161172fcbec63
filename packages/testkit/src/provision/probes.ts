import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { MongoClient } from 'mongodb';
import { Socket } from 'node:net';

/** True when something accepts TCP connections on host:port within `timeoutMs`. */
export function tcpOpen(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (open: boolean): void => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.connect(port, host);
  });
}

/** True when `url` is a NATS server with JetStream enabled for our account. */
export async function natsHasJetStream(url: string, timeoutMs = 2_000): Promise<boolean> {
  try {
    const nc = await connect({ servers: url, timeout: timeoutMs, reconnect: false });
    try {
      const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
      await jsm.getAccountInfo();
      return true;
    } finally {
      await nc.close();
    }
  } catch {
    return false;
  }
}

/** True when `url` is a MongoDB-compatible server that answers `ping`. */
export async function mongoAnswersPing(url: string, timeoutMs = 2_000): Promise<boolean> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs });
  try {
    await client.db('admin').command({ ping: 1 });
    return true;
  } catch {
    return false;
  } finally {
    await client.close();
  }
}
