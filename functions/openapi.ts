import { app, type HttpResponseInit } from '@azure/functions';
import { anonymous } from '../lib/auth/authorize';
import { ok } from '../lib/http';
import { openApiDocument } from '../lib/api/openapi';

async function getOpenApi(): Promise<HttpResponseInit> {
  return ok(openApiDocument());
}

app.http('getOpenApi', { route: 'openapi.json', methods: ['GET'], handler: anonymous(getOpenApi) });
