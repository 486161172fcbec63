export type { Decider, Evolver } from './decider.js';
export { asDecided, fold, foldRecorded } from './decider.js';
export type { CommandHandlerOptions, HandleOptions, HandledCommand, LoadedState } from './command-handler.js';
export { CommandHandler } from './command-handler.js';
