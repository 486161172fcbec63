import { describe, expect, it } from 'vitest';
import { ArgsValidator } from '../args-validator.js';
import { BUILTIN_TOOLS, findBuiltinTool, isReservedToolName } from './index.js';

describe('built-in tools', () => {
  it('are current_time and calculator, with reserved names', () => {
    expect(BUILTIN_TOOLS.map((tool) => tool.name)).toEqual(['current_time', 'calculator']);
    expect(isReservedToolName('calculator')).toBe(true);
    expect(isReservedToolName('Current_Time')).toBe(true);
    expect(isReservedToolName('get_weather')).toBe(false);
    expect(findBuiltinTool('calculator')?.name).toBe('calculator');
    expect(findBuiltinTool('constructor')).toBeUndefined();
  });

  it('each has a description and an input schema a tenant tool would also have to pass', () => {
    const validator = new ArgsValidator();
    for (const tool of BUILTIN_TOOLS) {
      expect(tool.name).toMatch(/^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/);
      expect(tool.description.length).toBeGreaterThan(20);
      expect(() => validator.assertToolSchema(tool.inputSchema)).not.toThrow();
    }
  });
});
