"""Connecting real network accounts (the operator's side; never an agent tool).

- `connect.py`: verify credentials with the network, then store the account (sealed by storage/vault.py);
  disconnect and reconnect.
- `oauth.py`: the generic OAuth 2.0 authorization-code + PKCE flow (per-network endpoints, scopes, client
  apps; single-use state that expires in 10 minutes), completed by `GET /connect/{platform}/callback`.
- `checks.py`: `socialpub integrations check` and the console's Check button: a read-only check of one account
  (token, granted scopes against each post kind's needs, reachability).
- `tokens.py`: the worker tick that refreshes credentials ahead of expiry (TICKS, listed in tools/areas.py).
- `secrets.py`: `socialpub secrets rotate` (every stored secret re-encrypted under the newest vault key).
"""
