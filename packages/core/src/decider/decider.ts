import type { EventData, RecordedEvent } from '../typing/index.js';

/**
 * An aggregate as pure functions: `decide` turns a command and the current state into new events,
 * `evolve` folds one event into the state. No I/O, so it is tested with given/when/then.
 */
export interface Decider<State, Command, Event extends EventData> {
  initialState: () => State;
  decide: (command: Command, state: State) => Event[];
  evolve: (state: State, event: Event) => State;
}

/** What a fold needs of a decider. */
export type Evolver<State, Event extends EventData> = Pick<
  Decider<State, never, Event>,
  'initialState' | 'evolve'
>;

/** Folds events into a state from the decider's initial state (or from a given one). */
export const fold = <State, Event extends EventData>(
  decider: Evolver<State, Event>,
  events: readonly Event[],
  from: State = decider.initialState(),
): State => events.reduce((state, event) => decider.evolve(state, event), from);

/**
 * An event read from a decider's stream, as one of its events. A stream holds only what its
 * decider decided (nothing else appends to it), so this is the one place that is taken on trust.
 */
export const asDecided = <Event extends EventData>(event: RecordedEvent): Event =>
  event as EventData as Event;

/** Folds events read from a decider's stream (see `asDecided`). */
export const foldRecorded = <State, Event extends EventData>(
  decider: Evolver<State, Event>,
  events: readonly RecordedEvent[],
  from: State = decider.initialState(),
): State => fold(decider, events.map(asDecided<Event>), from);
