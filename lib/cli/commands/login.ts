import type { Command } from 'commander';
import { loginClientCredentials, loginDev, tokenExpiry } from '../auth';
import { CliError, EXIT } from '../exitCodes';
import { col, print, type OutputFormat } from '../output';
import { DEFAULT_URL, getProfile, loadProfiles, profileName, saveCredential, saveProfiles, setProfile, type Profile } from '../profiles';

/** `login`, `logout` and `profile`: who the CLI is and which service it talks to. */
export function registerLogin(program: Command): void {
  program
    .command('login')
    .description('Sign in for the profile: client credentials, a token, Negotiate (Kerberos) or the development issuer')
    .option('--client-id <id>', 'client credentials: the application (client) id')
    .option('--client-secret <secret>', 'client credentials: the secret (or MESHSYNC_CLIENT_SECRET)')
    .option('--authority <url>', 'client credentials: the OIDC authority (issuer) URL; remembered in the profile')
    .option('--scope <scope>', 'client credentials: the scope to ask for, e.g. api://meshsync/.default; remembered')
    .option('--resource <uri>', 'client credentials: the resource indicator to ask for (ADFS and RFC 8707 issuers); remembered')
    .option('--negotiate', 'sign every request with Windows Negotiate from your Kerberos tickets (kinit)')
    .option('--spn <spn>', 'Negotiate: the service principal (default HTTP@<host of the url>)')
    .option('--dev', 'Development only: a token from the development issuer of a local service')
    .option('--role <role>', '--dev: Admin, Operator or Viewer', 'Admin')
    .option('--user <upn>', '--dev: the user name in the token')
    .option('--data-dir <dir>', "--dev: the service's data folder", '.data')
    .action(async (_opts: unknown, command: Command) => {
      const o = command.optsWithGlobals();
      const name = profileName(o.profile);
      const profile: Profile = { ...getProfile(name) };
      if (o.url) profile.url = o.url;
      const modes = [o.clientId, o.token, o.negotiate, o.dev].filter(Boolean).length;
      if (modes !== 1)
        throw new CliError('login needs exactly one of --client-id (with --client-secret and --authority), --token, --negotiate or --dev.', EXIT.usage);
      if (o.negotiate) {
        profile.auth = 'negotiate';
        if (o.spn) profile.spn = o.spn;
        setProfile(name, profile);
        saveCredential(name, undefined);
        process.stdout.write(`profile '${name}': requests to ${profile.url} are signed with Negotiate\n`);
        return;
      }
      profile.auth = 'bearer';
      let credential;
      if (o.token) credential = { accessToken: o.token as string, expiresOn: tokenExpiry(o.token) };
      else if (o.dev) {
        if (!/^(admin|operator|viewer)$/i.test(o.role)) throw new CliError(`--role must be Admin, Operator or Viewer, not '${o.role}'.`, EXIT.usage);
        credential = await loginDev(o.dataDir, o.role, o.user);
      } else {
        const secret = o.clientSecret ?? process.env.MESHSYNC_CLIENT_SECRET;
        const authority = o.authority ?? profile.authority;
        if (!secret) throw new CliError('--client-id needs --client-secret (or MESHSYNC_CLIENT_SECRET).', EXIT.usage);
        if (!authority) throw new CliError('--client-id needs --authority (the OIDC issuer URL) the first time; the profile remembers it.', EXIT.usage);
        profile.authority = authority;
        if (o.scope) profile.scope = o.scope;
        if (o.resource) profile.resource = o.resource;
        credential = await loginClientCredentials(authority, o.clientId, secret, profile.scope, profile.resource);
      }
      setProfile(name, profile);
      saveCredential(name, credential);
      process.stdout.write(`profile '${name}': signed in to ${profile.url}${credential.expiresOn ? ` until ${credential.expiresOn}` : ''}\n`);
    });
  program
    .command('logout')
    .description("Forget the profile's cached token and secret")
    .action(async (_opts: unknown, command: Command) => {
      const name = profileName(command.optsWithGlobals().profile);
      saveCredential(name, undefined);
      process.stdout.write(`profile '${name}': signed out\n`);
    });

  const p = program.command('profile').description('Profiles: one per service (URL and sign-in)');
  p.command('ls')
    .description('List profiles (* marks the current one)')
    .action(async (_opts: unknown, command: Command) => {
      const file = loadProfiles();
      const rows = Object.entries(file.profiles).map(([n, pr]) => ({
        current: n === file.current ? '*' : '',
        name: n,
        url: pr.url,
        auth: pr.auth ?? 'bearer',
        authority: pr.authority ?? '',
      }));
      print(rows, (command.optsWithGlobals().output ?? 'table') as OutputFormat, [
        col('', 'current'),
        col('NAME', 'name'),
        col('URL', 'url'),
        col('AUTH', 'auth'),
        col('AUTHORITY', 'authority'),
      ]);
    });
  p.command('set <name>')
    .description('Create or change a profile')
    .option('--authority <url>', 'OIDC authority for client-credentials sign-in')
    .option('--scope <scope>', 'scope for client-credentials sign-in')
    .action(async (name: string, _opts: unknown, command: Command) => {
      const o = command.optsWithGlobals();
      const profile = { ...getProfile(name) };
      if (o.url) profile.url = o.url;
      if (o.authority) profile.authority = o.authority;
      if (o.scope) profile.scope = o.scope;
      setProfile(name, { ...profile, url: profile.url || DEFAULT_URL });
      process.stdout.write(`profile '${name}': ${profile.url}\n`);
    });
  p.command('use <name>')
    .description('Make a profile the current one')
    .action(async (name: string) => {
      const file = loadProfiles();
      if (!file.profiles[name]) {
        throw new CliError(`No profile '${name}' (meshsync profile set ${name} --url ...).`, EXIT.notFound);
      }
      saveProfiles({ ...file, current: name });
      process.stdout.write(`current profile: ${name}\n`);
    });
}
