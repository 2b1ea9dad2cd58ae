-- The PostgreSQL schema: the same tables and rules as the embedded store, with every
-- tenant table's primary key led by team_id (so the schema can be distributed by team)
-- and row-level security on each of them. Stamps are BIGINT microseconds since the Unix
-- epoch, as in SQLite, so both backends compare and round-trip them identically.
--
-- Row-level security: the application runs as `mnem_app` (a role without BYPASSRLS that
-- owns nothing), and every transaction names its team with
-- `set_config('mnem.team_id', …, true)`; a policy admits only that team's rows, for
-- reading and for writing. The service also filters by team in every statement: the
-- policy is the second line, catching a statement that forgot.
--
-- Three tables hold no memory content and are global (reference tables on a sharded
-- cluster): `teams` (names), `api_keys` (hashes; a request presents only its token), and
-- `search_jobs` (the embedding queue: ids and states, no text), which the embedding
-- worker claims across teams.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mnem_app') THEN
        CREATE ROLE mnem_app NOLOGIN NOBYPASSRLS;
        -- The login role switches to it on every pooled connection.
        EXECUTE format('GRANT mnem_app TO %I', current_user);
    END IF;
END
$$;

-- The team of the current transaction; NULL (no rows) when none was set.
CREATE FUNCTION mnem_team() RETURNS uuid LANGUAGE sql STABLE AS
$$ SELECT NULLIF(current_setting('mnem.team_id', true), '')::uuid $$;

CREATE FUNCTION mnem_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END
$$;

-- Full text without stop words, like SQLite's porter tokenizer: the query side already
-- drops English function words unless a query is nothing else ("to be or not").
CREATE TEXT SEARCH DICTIONARY mnem_stem (TEMPLATE = snowball, LANGUAGE = english);
CREATE TEXT SEARCH CONFIGURATION mnem_english (COPY = english);
ALTER TEXT SEARCH CONFIGURATION mnem_english
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH mnem_stem;

CREATE TABLE store_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE teams (
    team_id    uuid PRIMARY KEY,
    name       text NOT NULL UNIQUE,
    created_at bigint NOT NULL
);

CREATE TABLE profiles (
    team_id    uuid NOT NULL REFERENCES teams (team_id),
    profile_id uuid NOT NULL,
    name       text NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (team_id, profile_id),
    UNIQUE (team_id, name)
);

CREATE TABLE evidence (
    team_id          uuid NOT NULL REFERENCES teams (team_id),
    evidence_id      uuid NOT NULL,
    owner_profile_id uuid NOT NULL,
    content          text NOT NULL,
    kind             text NOT NULL,
    source_type      text NOT NULL,
    source           text NOT NULL,
    authority        text NOT NULL,
    source_group     text NOT NULL,
    source_key       text,
    source_revision  bigint,
    labels           text NOT NULL,  -- JSON array, sorted
    refs             text NOT NULL,  -- JSON array of {kind, id}, canonical
    scope            text NOT NULL,  -- path text, '' = team-wide
    scope_depth      bigint NOT NULL,
    space            text NOT NULL,
    observed_at      bigint NOT NULL,
    recorded_at      bigint NOT NULL,
    expires_at       bigint,
    content_hash     text NOT NULL,
    state            text NOT NULL,
    -- Full-text state, derived from content by the database itself.
    tsv              tsvector GENERATED ALWAYS AS (to_tsvector('mnem_english', content)) STORED,
    PRIMARY KEY (team_id, evidence_id),
    FOREIGN KEY (team_id, owner_profile_id) REFERENCES profiles (team_id, profile_id)
);

CREATE INDEX evidence_listing ON evidence (team_id, state, observed_at DESC, evidence_id);
CREATE INDEX evidence_text ON evidence USING gin (tsv);
CREATE INDEX evidence_by_source_key ON evidence (team_id, source_key, source_revision)
    WHERE source_key IS NOT NULL;

-- BM25 statistics per team, kept by trigger in the writer's transaction: documents and
-- their total length, and each lexeme's document frequency. Like SQLite's FTS5 index
-- they count every stored text (retracted too) until it is erased.
CREATE TABLE text_stats (
    team_id   uuid PRIMARY KEY,
    documents bigint NOT NULL,
    lexemes   bigint NOT NULL
);

CREATE TABLE term_stats (
    team_id   uuid NOT NULL,
    lexeme    text NOT NULL,
    documents bigint NOT NULL,
    PRIMARY KEY (team_id, lexeme)
);

CREATE FUNCTION mnem_text_length(v tsvector) RETURNS bigint LANGUAGE sql IMMUTABLE AS
$$ SELECT COALESCE(SUM(COALESCE(cardinality(positions), 1)), 0)::bigint FROM unnest(v) $$;

CREATE FUNCTION mnem_count_text(team uuid, v tsvector, sign integer) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO text_stats AS s (team_id, documents, lexemes)
    VALUES (team, sign, sign * mnem_text_length(v))
    ON CONFLICT (team_id) DO UPDATE
        SET documents = s.documents + excluded.documents, lexemes = s.lexemes + excluded.lexemes;
    INSERT INTO term_stats AS t (team_id, lexeme, documents)
    SELECT team, l, sign FROM unnest(tsvector_to_array(v)) AS l ORDER BY l
    ON CONFLICT (team_id, lexeme) DO UPDATE SET documents = t.documents + excluded.documents;
$$;

CREATE FUNCTION mnem_evidence_text_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.content <> '' THEN
        PERFORM mnem_count_text(OLD.team_id, OLD.tsv, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.content <> '' THEN
        PERFORM mnem_count_text(NEW.team_id, NEW.tsv, 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER evidence_text_stats_insert AFTER INSERT ON evidence
    FOR EACH ROW EXECUTE FUNCTION mnem_evidence_text_stats();
CREATE TRIGGER evidence_text_stats_change AFTER UPDATE OF content ON evidence
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
    EXECUTE FUNCTION mnem_evidence_text_stats();

-- Okapi BM25 of one document for the query's lexemes with their idf weights (k1 = 1.2,
-- b = 0.75, FTS5's constants). idf is Lucene's ln(1 + (N - n + 0.5) / (n + 0.5)), which
-- stays positive for terms in most documents where FTS5's unsmoothed form goes to ~0.
CREATE FUNCTION mnem_bm25(doc tsvector, terms text[], idf float8[], avgdl float8)
RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH u AS (SELECT lexeme, cardinality(positions)::float8 AS tf FROM unnest(doc)),
         len AS (SELECT SUM(tf) AS dl FROM u)
    SELECT COALESCE(SUM(w.idf * u.tf * 2.2
                        / (u.tf + 1.2 * (0.25 + 0.75 * len.dl / GREATEST(avgdl, 1)))), 0)
    FROM u JOIN unnest(terms, idf) AS w (lexeme, idf) USING (lexeme), len
$$;

CREATE TABLE evidence_refs (
    team_id     uuid NOT NULL,
    ref_kind    text NOT NULL,
    ref_id      text NOT NULL,
    evidence_id uuid NOT NULL,
    PRIMARY KEY (team_id, ref_kind, ref_id, evidence_id)
);

CREATE TABLE evidence_events (
    team_id          uuid NOT NULL,
    evidence_id      uuid NOT NULL,
    seq              bigint NOT NULL,
    state            text NOT NULL,
    actor_profile_id uuid NOT NULL,
    at               bigint NOT NULL,
    reason           text,
    PRIMARY KEY (team_id, evidence_id, seq)
);

CREATE TRIGGER evidence_events_append_only BEFORE UPDATE OR DELETE ON evidence_events
    FOR EACH ROW EXECUTE FUNCTION mnem_append_only();

-- Derived search state. The queue is global and holds ids only; vectors are per team.
-- `embedding` has no fixed width (the contract decides it); the HNSW index is made per
-- width on the cast expression when a contract is activated.
CREATE TABLE search_jobs (
    team_id       uuid NOT NULL,
    target_kind   text NOT NULL,  -- evidence | entity | relationship
    target_id     uuid NOT NULL,
    state         text NOT NULL,  -- pending | current | failed
    attempts      bigint NOT NULL DEFAULT 0,
    last_error    text,
    enqueued_at   bigint NOT NULL,
    updated_at    bigint NOT NULL,
    -- A worker's lease: claimed rows are skipped by other workers until it passes.
    claimed_until bigint,
    PRIMARY KEY (team_id, target_kind, target_id)
);

CREATE INDEX search_jobs_pending ON search_jobs (enqueued_at) WHERE state = 'pending';

CREATE TABLE evidence_vectors (
    team_id     uuid NOT NULL,
    evidence_id uuid NOT NULL,
    contract    text NOT NULL,
    dims        integer NOT NULL,
    embedding   vector NOT NULL,
    PRIMARY KEY (team_id, evidence_id)
);

-- Discovery documents: an entity's names, a relationship's endpoints and predicate
-- (never evidence text). They only choose where discovery starts.
CREATE TABLE graph_documents (
    team_id     uuid NOT NULL,
    target_kind text NOT NULL,  -- entity | relationship
    target_id   uuid NOT NULL,
    text        text NOT NULL,
    contract    text,
    dims        integer,
    embedding   vector,
    PRIMARY KEY (team_id, target_kind, target_id)
);

-- The semantic layer (see the SQLite schema for the rules; they are the same).
CREATE TABLE entities (
    team_id    uuid NOT NULL REFERENCES teams (team_id),
    entity_id  uuid NOT NULL,
    name       text NOT NULL,
    kind       text NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (team_id, entity_id)
);

CREATE TABLE entity_aliases (
    team_id   uuid NOT NULL,
    alias_key text NOT NULL,
    entity_id uuid NOT NULL,
    alias     text NOT NULL,
    PRIMARY KEY (team_id, alias_key, entity_id)
);

CREATE TABLE predicates (
    team_id       uuid NOT NULL,
    predicate     text NOT NULL,
    single_valued boolean NOT NULL,
    declared_at   bigint NOT NULL,
    PRIMARY KEY (team_id, predicate)
);

CREATE TABLE relationships (
    team_id            uuid NOT NULL,
    relationship_id    uuid NOT NULL,
    owner_profile_id   uuid NOT NULL,
    subject_entity_id  uuid NOT NULL,
    predicate          text NOT NULL,
    predicate_surface  text NOT NULL,
    object_entity_id   uuid,
    object_value       text,
    object_key         text NOT NULL,
    polarity           text NOT NULL,
    valid_from         bigint,
    valid_to           bigint,
    recorded_at        bigint NOT NULL,
    recorded_to        bigint,
    semantic_group_key text NOT NULL,
    supersedes         uuid,
    verdict            text NOT NULL,
    tier               text NOT NULL,
    status             text NOT NULL,
    version            bigint NOT NULL,
    PRIMARY KEY (team_id, relationship_id),
    CHECK ((object_entity_id IS NULL) <> (object_value IS NULL))
);

CREATE INDEX relationships_by_subject
    ON relationships (team_id, subject_entity_id, status, recorded_at DESC);
CREATE INDEX relationships_by_object
    ON relationships (team_id, object_entity_id, status, recorded_at DESC)
    WHERE object_entity_id IS NOT NULL;
CREATE INDEX relationships_by_claim ON relationships (team_id, subject_entity_id, predicate);
CREATE INDEX relationships_by_predecessor
    ON relationships (team_id, supersedes) WHERE supersedes IS NOT NULL;

CREATE TABLE relationship_supports (
    team_id         uuid NOT NULL,
    relationship_id uuid NOT NULL,
    evidence_id     uuid NOT NULL,
    span_start      bigint NOT NULL,
    span_end        bigint NOT NULL,
    quote           text,
    PRIMARY KEY (team_id, relationship_id, evidence_id, span_start, span_end)
);

CREATE INDEX supports_by_evidence ON relationship_supports (team_id, evidence_id);

CREATE TABLE relationship_erasures (
    team_id         uuid NOT NULL,
    relationship_id uuid NOT NULL,
    erased_at       bigint NOT NULL,
    PRIMARY KEY (team_id, relationship_id)
);

CREATE TABLE verification_events (
    team_id         uuid NOT NULL,
    relationship_id uuid NOT NULL,
    seq             bigint NOT NULL,
    verdict         text NOT NULL,
    confidence      double precision NOT NULL,
    verifier        text NOT NULL,
    rationale       text NOT NULL,
    at              bigint NOT NULL,
    PRIMARY KEY (team_id, relationship_id, seq)
);

CREATE TABLE relationship_transitions (
    team_id          uuid NOT NULL,
    relationship_id  uuid NOT NULL,
    seq              bigint NOT NULL,
    from_tier        text,
    to_tier          text NOT NULL,
    from_status      text,
    to_status        text NOT NULL,
    reason           text NOT NULL,
    actor_profile_id uuid NOT NULL,
    at               bigint NOT NULL,
    PRIMARY KEY (team_id, relationship_id, seq)
);

-- Logs are append-only; the only way a row goes is erasure, after its tombstone.
CREATE FUNCTION mnem_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM relationship_erasures x
            WHERE x.team_id = OLD.team_id AND x.relationship_id = OLD.relationship_id) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END
$$;

CREATE TRIGGER verification_events_append_only BEFORE UPDATE OR DELETE ON verification_events
    FOR EACH ROW EXECUTE FUNCTION mnem_log_append_only();
CREATE TRIGGER relationship_transitions_append_only
    BEFORE UPDATE OR DELETE ON relationship_transitions
    FOR EACH ROW EXECUTE FUNCTION mnem_log_append_only();

CREATE FUNCTION mnem_relationship_content_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a relationship''s content is immutable; correct it instead';
END
$$;

CREATE TRIGGER relationships_content_immutable BEFORE UPDATE OF
    owner_profile_id, subject_entity_id, predicate, predicate_surface, object_entity_id,
    object_value, object_key, polarity, valid_from, valid_to, recorded_at,
    semantic_group_key, supersedes, verdict ON relationships
    FOR EACH ROW EXECUTE FUNCTION mnem_relationship_content_immutable();

CREATE TABLE idempotency (
    team_id      uuid NOT NULL,
    key          text NOT NULL,
    request_hash text NOT NULL,
    outcome      text NOT NULL,
    created_at   bigint NOT NULL,
    PRIMARY KEY (team_id, key)
);

CREATE TABLE api_keys (
    key_prefix  text PRIMARY KEY,
    team_id     uuid NOT NULL,
    profile_id  uuid NOT NULL,
    access      text NOT NULL CHECK (access IN ('read', 'write')),
    secret_hash text NOT NULL,
    created_at  bigint NOT NULL,
    expires_at  bigint,
    revoked_at  bigint,
    FOREIGN KEY (team_id, profile_id) REFERENCES profiles (team_id, profile_id)
);

CREATE INDEX api_keys_by_team ON api_keys (team_id, created_at);

CREATE FUNCTION mnem_api_key_grant_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'an API key''s grant is immutable; revoke it and create another';
END
$$;

CREATE TRIGGER api_keys_grant_is_immutable BEFORE UPDATE OF
    key_prefix, team_id, profile_id, access, secret_hash, created_at, expires_at ON api_keys
    FOR EACH ROW EXECUTE FUNCTION mnem_api_key_grant_immutable();

-- Row-level security on every tenant table, forced even for the owner.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['profiles', 'evidence', 'text_stats', 'term_stats',
        'evidence_refs', 'evidence_events', 'evidence_vectors', 'graph_documents',
        'entities', 'entity_aliases', 'predicates', 'relationships',
        'relationship_supports', 'relationship_erasures', 'verification_events',
        'relationship_transitions', 'idempotency']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY team_isolation ON %I USING (team_id = mnem_team()) '
                       'WITH CHECK (team_id = mnem_team())', t);
    END LOOP;
END
$$;

GRANT USAGE ON SCHEMA public TO mnem_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO mnem_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO mnem_app;
