import { connectorContract } from '../../support/connectorContract';
import { FileFixture } from './fileFixture';

const capabilities = { delta: true, rename: true, export: true, malformed: true };

connectorContract({ name: 'file connector, CSV', capabilities, makeFixture: () => FileFixture.create('csv') });
connectorContract({ name: 'file connector, JSON', capabilities, makeFixture: () => FileFixture.create('json') });
