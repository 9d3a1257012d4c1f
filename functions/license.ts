import { app, type HttpResponseInit } from '@azure/functions';
import { readLicense } from '../lib/api/license';
import { authorize } from '../lib/auth/authorize';
import { ok } from '../lib/http';

async function getLicense(): Promise<HttpResponseInit> {
  return ok(readLicense());
}

app.http('getLicense', { route: 'license', methods: ['GET'], handler: authorize('license.read', getLicense, { rateLimit: 'sensitive' }) });
