import { deepStrictEqual, ok } from 'node:assert/strict';
import type { Decider } from '../decider/index.js';
import { fold } from '../decider/index.js';
import type { EventData } from '../typing/index.js';

/** Strips store-assigned fields so a spec compares what the decider decided, not ids or metadata. */
const shape = (events: readonly EventData[]): Array<Pick<EventData, 'type' | 'data'>> =>
  events.map(({ type, data }) => ({ type, data }));

/** given/when/then for deciders: `DeciderSpec.for(decider).given(events).when(command).then(events)`. */
export const DeciderSpec = {
  for<State, Command, Event extends EventData>(decider: Decider<State, Command, Event>) {
    return {
      given(events: readonly Event[]) {
        const state = fold(decider, events);
        return {
          when(command: Command) {
            const run = (): Event[] => decider.decide(command, state);
            return {
              /** Asserts the decided events (type and data). */
              then(expected: readonly Event[]): void {
                deepStrictEqual(shape(run()), shape(expected));
              },
              /** Asserts the decision is refused with this error class (and message pattern). */
              thenThrows(errorClass: new (...args: never[]) => Error, message?: RegExp): void {
                let thrown: unknown;
                try {
                  run();
                } catch (error) {
                  thrown = error;
                }
                ok(thrown instanceof errorClass, `expected ${errorClass.name}, got ${String(thrown)}`);
                if (message)
                  ok(message.test((thrown as Error).message), `message ${(thrown as Error).message}`);
              },
              /** Asserts the state after evolving with the decided events. */
              thenState(expected: State): void {
                deepStrictEqual(fold(decider, run(), state), expected);
              },
            };
          },
        };
      },
    };
  },
};
