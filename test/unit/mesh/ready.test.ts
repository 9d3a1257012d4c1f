import { AppError } from '../../../lib/core/errors';
import { freePort } from '../../../lib/runtime/azurite';
import { meshReadModelStatus, readyModel, startMeshReadModel, stopMeshReadModel } from '../../../lib/mesh/readModel';
import { resetTableClients } from '../../../lib/storage/tables';

/** Before the read model has loaded, a mesh query waits briefly, then answers 503 with Retry-After. */
jest.setTimeout(30_000);

test('storage that does not answer: 503 service_unavailable with Retry-After after the wait', async () => {
  const port = await freePort();
  process.env.AzureWebJobsStorage = `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${Buffer.from('k').toString('base64')};TableEndpoint=http://127.0.0.1:${port}/devstoreaccount1;`;
  process.env.Storage__TablePrefix = 'ready';
  resetTableClients();
  const errors = jest.spyOn(console, 'error').mockImplementation(() => undefined);
  startMeshReadModel();
  try {
    const err = await readyModel().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(503);
    expect((err as AppError).code).toBe('service_unavailable');
    expect((err as AppError).extra.headers).toEqual({ 'retry-after': '5' });
    expect(meshReadModelStatus()).toMatchObject({ ready: false, objects: 0 });
  } finally {
    await stopMeshReadModel();
    errors.mockRestore();
  }
});

test('after the stop, a late query is a 503 and starts no new reader (its retries would log connection errors while the storage goes away)', async () => {
  const port = await freePort();
  process.env.AzureWebJobsStorage = `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${Buffer.from('k').toString('base64')};TableEndpoint=http://127.0.0.1:${port}/devstoreaccount1;`;
  process.env.Storage__TablePrefix = 'ready';
  resetTableClients();
  const errors = jest.spyOn(console, 'error').mockImplementation(() => undefined);
  try {
    startMeshReadModel();
    await stopMeshReadModel();
    errors.mockClear();
    const err = await readyModel().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('service_unavailable');
    expect((err as AppError).detail).toBe('The service is stopping.');
    expect(meshReadModelStatus()).toMatchObject({ ready: false, objects: 0 });
    // Nothing started: nothing tries the storage, nothing logs.
    expect(errors).not.toHaveBeenCalled();
    // A start (a test, a restarted host) clears the stop.
    startMeshReadModel();
  } finally {
    await stopMeshReadModel();
    errors.mockRestore();
  }
});
