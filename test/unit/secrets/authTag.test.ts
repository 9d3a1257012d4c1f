import { decryptSecret, encryptSecret, setSecretsKey } from '../../../lib/secrets';

/**
 * AES-GCM verifies only as many tag bytes as it is given unless the tag length is fixed: a sealed value whose
 * tag was cut to its first 4 bytes would still open, and a forger would need about 2^32 tries instead of 2^128.
 * Sealed values carry a 16-byte tag; anything else is refused.
 */
describe('sealed secrets: the authentication tag is 16 bytes', () => {
  beforeAll(() => setSecretsKey(Buffer.alloc(32, 11)));

  const withTag = (sealed: string, tag: Buffer) => {
    const parts = sealed.split('.');
    parts[2] = tag.toString('base64url');
    return parts.join('.');
  };

  it('the tag written is 16 bytes and opens', () => {
    const sealed = encryptSecret('tag-length-plaintext', 'owner-t');
    expect(Buffer.from(sealed.split('.')[2], 'base64url')).toHaveLength(16);
    expect(decryptSecret(sealed, 'owner-t')).toBe('tag-length-plaintext');
  });

  it.each([4, 8, 12, 15])('a tag truncated to its first %i bytes is refused', (bytes) => {
    const sealed = encryptSecret('tag-length-plaintext', 'owner-t');
    const tag = Buffer.from(sealed.split('.')[2], 'base64url');
    expect(() => decryptSecret(withTag(sealed, tag.subarray(0, bytes)), 'owner-t')).toThrow();
  });

  it('a tag longer than 16 bytes is refused', () => {
    const sealed = encryptSecret('tag-length-plaintext', 'owner-t');
    const tag = Buffer.from(sealed.split('.')[2], 'base64url');
    expect(() => decryptSecret(withTag(sealed, Buffer.concat([tag, Buffer.from([0])])), 'owner-t')).toThrow();
  });
});
