import { parseOpenAiReply } from '../../../plugins/providers/openai.js';

describe('openai-compatible replies with reasoning', () => {
  it('keeps reasoning_content (DeepSeek, llama.cpp) or reasoning (OpenRouter) beside the answer', () => {
    const withContent = parseOpenAiReply({ choices: [{ message: { content: 'four', reasoning_content: ' two and two ' } }] }, 'h');
    expect(withContent).toMatchObject({ content: 'four', reasoning: 'two and two' });
    const withReasoning = parseOpenAiReply({ choices: [{ message: { content: 'four', reasoning: 'add them' } }] }, 'h');
    expect(withReasoning.reasoning).toBe('add them');
    expect(parseOpenAiReply({ choices: [{ message: { content: 'four' } }] }, 'h')).not.toHaveProperty('reasoning');
  });
});
