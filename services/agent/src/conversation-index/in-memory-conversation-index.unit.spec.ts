import { describeConversationIndexContract } from './conversation-index.contract.js';
import { InMemoryConversationIndex } from './in-memory-conversation-index.js';

describeConversationIndexContract('in memory', () => Promise.resolve(new InMemoryConversationIndex()));
