/**
 * Preloaded (`--import`) into a service process by `turn-latency` when `BENCH_DB_TRACE`
 * names a directory: every MongoDB command the process sends is appended to
 * `<dir>/<BENCH_DB_TRACE_NAME>.log` as `epochMs durationMs command collection stream`, so the bench
 * can count round trips per process and per turn. Not loaded otherwise.
 */
import { appendFileSync } from 'node:fs';
import mongodb from 'mongodb';

const dir = process.env.BENCH_DB_TRACE;
const file = `${dir}/${process.env.BENCH_DB_TRACE_NAME ?? process.pid}.log`;
const { MongoClient } = mongodb;
const connect = MongoClient.prototype.connect;
MongoClient.prototype.connect = function tracedConnect(...args) {
  if (!this.__keelTraced) {
    this.__keelTraced = true;
    this.monitorCommands = true;
    const started = new Map();
    this.on('commandStarted', (e) => {
      const target = e.command[e.commandName];
      const filter = e.command.filter ?? e.command.updates?.[0]?.q ?? e.command.documents?.[0] ?? {};
      const stream = String(filter.s ?? filter._id ?? '-').replace(/\s+/g, '_');
      started.set(e.requestId, {
        at: Date.now(),
        collection: typeof target === 'string' ? target : '-',
        stream,
      });
    });
    const done = (e) => {
      const s = started.get(e.requestId);
      started.delete(e.requestId);
      if (!s || e.commandName === 'hello' || e.commandName === 'ismaster') return;
      appendFileSync(
        file,
        `${s.at} ${(e.duration ?? 0).toFixed(2)} ${e.commandName} ${s.collection} ${s.stream}\n`,
      );
    };
    this.on('commandSucceeded', done);
    this.on('commandFailed', done);
  }
  return connect.apply(this, args);
};
