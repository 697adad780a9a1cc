import { expect } from 'chai';
import { parseContentType } from './contentTypeMarker.ts';

describe('parseContentType (the [content_type:X] marker of an agent reply)', () => {
  it('given a reply ending with a markdown marker, when parsed, then markdown and the message without the marker', () => {
    expect(parseContentType('# Title\n\nBody\n[content_type:markdown]')).to.deep.equal({ message: '# Title\n\nBody', contentType: 'markdown' });
  });

  it('given a marker in any case with spaces, when parsed, then its type, lower-cased', () => {
    expect(parseContentType('[Content_Type: HTML ]<p>hi</p>')).to.deep.equal({ message: '<p>hi</p>', contentType: 'html' });
  });

  it('given no marker, when parsed, then text and the message unchanged (not even trimmed)', () => {
    expect(parseContentType('  plain  ')).to.deep.equal({ message: '  plain  ', contentType: 'text' });
  });

  it('given an unknown type and then a known one, when parsed, then the known one wins and both markers are removed', () => {
    expect(parseContentType('[content_type:json] x [content_type:html]')).to.deep.equal({ message: 'x', contentType: 'html' });
  });

  it('given only an unknown type, when parsed, then text, the marker removed', () => {
    expect(parseContentType('answer [content_type:pdf]')).to.deep.equal({ message: 'answer', contentType: 'text' });
  });
});
