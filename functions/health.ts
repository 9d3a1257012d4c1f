import { app, type HttpResponseInit } from '@azure/functions';
import { healthReport } from '../lib/api/health';
import { anonymous } from '../lib/auth/authorize';
import { json } from '../lib/http';

async function getHealth(): Promise<HttpResponseInit> {
  const { status, body } = await healthReport();
  return json(status, body, { 'cache-control': 'no-store' });
}

app.http('getHealth', { route: 'health', methods: ['GET'], handler: anonymous(getHealth) });
