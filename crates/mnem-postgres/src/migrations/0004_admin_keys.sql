-- Keys may carry the `admin` scope (retract or quarantine another profile's evidence).
ALTER TABLE api_keys DROP CONSTRAINT api_keys_access_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_access_check
    CHECK (access IN ('read', 'write', 'admin'));
