import { app, type HttpResponseInit } from '@azure/functions';
import os from 'node:os';
import { anonymous } from '../lib/auth/authorize';
import { SettingsReader } from '../lib/config';
import { json } from '../lib/http';
import { probeStorage } from '../lib/storage/health';

async function getHealth(): Promise<HttpResponseInit> {
  const storageOk = await probeStorage();
  const instance = new SettingsReader().string('Engine:InstanceName') ?? os.hostname();
  return json(storageOk ? 200 : 503, { status: storageOk ? 'healthy' : 'unhealthy', instance, storage: storageOk ? 'ok' : 'unreachable' }, { 'cache-control': 'no-store' });
}

app.http('getHealth', { route: 'health', methods: ['GET'], handler: anonymous(getHealth) });
