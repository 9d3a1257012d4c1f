/**
 * express ships no types and @types/express is not installed: the reference SCIM server
 * (test/support/scimReference.ts) is the only user, and types its handlers itself.
 */
declare module 'express';
