-- Ready for a distribution by team (Citus): `api_keys` is a reference table, held whole by
-- every node, because a request's key is found by its public prefix before any team is
-- known. A reference table may not reference a distributed table, so the key's reference
-- to `profiles` goes and its team is checked against `teams` (a reference table too). A
-- key's profile stays its team's by construction: the one statement that writes a key
-- runs in the transaction that ensures that profile in that team, no statement deletes a
-- profile, and a key's grant is immutable (mnem_api_key_grant_immutable).
ALTER TABLE api_keys DROP CONSTRAINT api_keys_team_id_profile_id_fkey;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_team_id_fkey
    FOREIGN KEY (team_id) REFERENCES teams (team_id);
