export { startFakeOpenAI } from './fake-openai.js';
export type { FakeOpenAI, FakeOpenAIOptions } from './fake-openai.js';
export { fakeReply, lastUserMessageIncludes, systemPromptIncludes } from './script.js';
export { messageText } from './wire.js';
export type {
  FakeChatMessage,
  FakeChatRequest,
  FakeErrorReply,
  FakeHangReply,
  FakeMatcher,
  FakeRecordedRequest,
  FakeReply,
  FakeStreamShape,
  FakeTextReply,
  FakeToolCall,
  FakeToolCallsReply,
  FakeUsage,
} from './types.js';
