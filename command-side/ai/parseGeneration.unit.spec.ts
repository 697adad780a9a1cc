import { expect } from 'chai';
import { completeMembers, generatedField, parseGeneration } from './parseGeneration.ts';

describe('ai/generate: reading a reply (parseGeneration)', () => {
  it('given one JSON object in a ```json fence with text around it, when parsed, then its members and the text as message', () => {
    const parsed = parseGeneration('Sure.\n```json\n{"payload": {"a": 1}}\n```\nDone.');
    expect(parsed.members).to.deep.equal({ payload: { a: 1 } });
    expect(parsed.message).to.equal('Sure.\n\nDone.');
  });

  it('given a bare object with a "message" member, when parsed, then the member is the message', () => {
    expect(parseGeneration('{"message": "hi", "payload": {}}')).to.deep.equal({ members: { message: 'hi', payload: {} }, codeLanguage: null, message: 'hi' });
  });

  it('given no JSON at all, when parsed, then no members and the reply as message', () => {
    expect(parseGeneration('I cannot do that.')).to.deep.equal({ members: {}, codeLanguage: null, message: 'I cannot do that.' });
    expect(parseGeneration('')).to.deep.equal({ members: {}, codeLanguage: null, message: null });
  });

  it('given a reply cut inside a string, when parsed, then the members written to their end are kept and the cut one is not', () => {
    const parsed = parseGeneration('```json\n{"payload": {"x": "a,}b"}, "codeblock": {"language": "js", "content": "export function run() { return \\"}');
    expect(parsed.members).to.deep.equal({ payload: { x: 'a,}b' } });
    expect(parsed.codeLanguage).to.equal('javascript');
  });

  it('given a cut after a closed value or in a number, when the members are read, then a closed value counts and a number does not', () => {
    expect(completeMembers('{"a": {"b": [1, 2]}, "c": "d"')).to.deep.equal({ a: { b: [1, 2] }, c: 'd' });
    expect(completeMembers('{"a": {"b": 1}, "n": 12')).to.deep.equal({ a: { b: 1 } });
    expect(completeMembers('{"a": [1, {"b": "\\"]"}], "c": {"d"')).to.deep.equal({ a: [1, { b: '"]' }] });
    expect(completeMembers('no object')).to.deep.equal({});
  });

  it('given each field form, when made a GeneratedContent, then codeblocks need code, bashblocks may be empty, objects are shown as JSON', () => {
    expect(generatedField('codeblock', { language: 'py', code: 'x = 1' })).to.deep.equal({ completed: true, content: 'x = 1', language: 'python' });
    expect(generatedField('codeblock', { language: 'javascript', content: '  ' })).to.deep.equal({ completed: false, content: '', language: 'javascript' });
    expect(generatedField('codeblock', 'print(1)', 'javascript')).to.deep.equal({ completed: true, content: 'print(1)', language: 'javascript' });
    expect(generatedField('codeblock', undefined)).to.deep.equal({ completed: false, content: '', language: 'python' });
    expect(generatedField('bashblock', { content: '' })).to.deep.equal({ completed: true, content: '', language: 'bash' });
    expect(generatedField('bashblock', 42)).to.deep.equal({ completed: false, content: '', language: 'bash' });
    expect(generatedField('payload', '{"a":1}')).to.deep.equal({ completed: true, content: '{\n  "a": 1\n}', language: 'json' });
    expect(generatedField('connection', ['x'])).to.deep.equal({ completed: false, content: '', language: 'json' });
  });
});
