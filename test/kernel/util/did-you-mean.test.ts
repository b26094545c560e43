import { closestName, didYouMean, editDistance, withDidYouMean } from '../../../kernel/util/did-you-mean.js';

describe('did you mean', () => {
  it('counts edits, a swap of neighbours as one', () => {
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('abc', 'abc')).toBe(0);
    expect(editDistance('wirte_file', 'write_file')).toBe(1);
    expect(editDistance('tmeout', 'timeoutms')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  it('finds the closest name, ignoring letter case, only when it is close', () => {
    const tools = ['read_file', 'write_file', 'edit_file', 'web_search'];
    expect(closestName('wirte_file', tools)).toBe('write_file');
    expect(closestName('WRITE_FILE', tools)).toBe('write_file');
    expect(closestName('websearch', tools)).toBe('web_search');
    expect(closestName('tmeout', ['endpoint', 'timeoutMs', 'retries'])).toBe('timeoutMs');
    expect(closestName('zzzzzz', tools)).toBeUndefined();
    expect(closestName('ls', ['rm', 'cp'])).toBeUndefined();
    expect(closestName('write_file', ['write_file'])).toBeUndefined();
    // At most so many edits, when the name given may be another real one (write_file is 3 from edit_file).
    expect(closestName('write_file', ['edit_file'])).toBe('edit_file');
    expect(closestName('write_file', ['edit_file'], 2)).toBeUndefined();
    expect(closestName('wirte_file', ['edit_file', 'write_file'], 2)).toBe('write_file');
  });

  it('says it one way, as its own sentence after a full stop, else after a semicolon', () => {
    expect(didYouMean('wirte_file', ['write_file'])).toBe('did you mean write_file?');
    expect(withDidYouMean('There is no tool named "wirte_file".', 'wirte_file', ['write_file'])).toBe(
      'There is no tool named "wirte_file". Did you mean write_file?',
    );
    expect(withDidYouMean('there is no tool named wirte_file', 'wirte_file', ['write_file'])).toBe(
      'there is no tool named wirte_file; did you mean write_file?',
    );
    expect(withDidYouMean('no such tool.', 'zzzz', ['write_file'])).toBe('no such tool.');
  });
});
