import type { EventData } from '../typing/index.js';

/**
 * An aggregate as pure functions: `decide` turns a command and the current state into new events,
 * `evolve` folds one event into the state. No I/O, so it is tested with given/when/then.
 */
export interface Decider<State, Command, Event extends EventData> {
  initialState: () => State;
  decide: (command: Command, state: State) => Event[];
  evolve: (state: State, event: Event) => State;
}

/** Folds events into a state from the decider's initial state (or from a given one). */
export const fold = <State, Event extends EventData>(
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve'>,
  events: readonly Event[],
  from: State = decider.initialState(),
): State => events.reduce((state, event) => decider.evolve(state, event), from);
