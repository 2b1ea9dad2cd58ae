-- The vector tables, each split into 32 partitions by a hash of the team. Each partition
-- has its own HNSW graph per width (an index made on the parent is made on every
-- partition), so a team's vector search walks a graph of its own vectors and those of
-- the few teams hashed beside it, not one graph of every team's. In one shared graph a
-- search walks other teams' vectors until enough of its own team's pass the filter
-- (pgvector's iterative scans): 100,000 vectors of 384 dimensions in 8 teams, top 100,
-- the median search for a team holding 4.6% of them took 12.3 ms there and 1.1 ms on its
-- partition (36.8%: 3.0 and 1.2 ms). A statement naming its team reads one partition
-- (pruned when it is planned). Partitioning by the distribution column keeps the tables
-- ready for Citus, which distributes a partitioned table with its partitions.
--
-- The rows are copied as they are; the migration's Rust step remakes the HNSW indexes
-- of every width stored.
ALTER TABLE evidence_vectors RENAME TO evidence_vectors_unpartitioned;
ALTER TABLE evidence_vectors_unpartitioned NO FORCE ROW LEVEL SECURITY;
ALTER TABLE evidence_vectors_unpartitioned DISABLE ROW LEVEL SECURITY;
ALTER INDEX evidence_vectors_pkey RENAME TO evidence_vectors_unpartitioned_pkey;
ALTER TABLE graph_documents RENAME TO graph_documents_unpartitioned;
ALTER TABLE graph_documents_unpartitioned NO FORCE ROW LEVEL SECURITY;
ALTER TABLE graph_documents_unpartitioned DISABLE ROW LEVEL SECURITY;
ALTER INDEX graph_documents_pkey RENAME TO graph_documents_unpartitioned_pkey;

CREATE TABLE evidence_vectors (
    team_id     uuid NOT NULL,
    evidence_id uuid NOT NULL,
    contract    text NOT NULL,
    dims        integer NOT NULL,
    embedding   vector NOT NULL,
    PRIMARY KEY (team_id, evidence_id)
) PARTITION BY HASH (team_id);

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
) PARTITION BY HASH (team_id);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['evidence_vectors', 'graph_documents'] LOOP
        FOR i IN 0..31 LOOP
            EXECUTE format('CREATE TABLE %I PARTITION OF %I '
                           'FOR VALUES WITH (MODULUS 32, REMAINDER %s)',
                           t || '_p' || lpad(i::text, 2, '0'), t, i);
        END LOOP;
    END LOOP;
END
$$;

INSERT INTO evidence_vectors (team_id, evidence_id, contract, dims, embedding)
    SELECT team_id, evidence_id, contract, dims, embedding FROM evidence_vectors_unpartitioned;
INSERT INTO graph_documents (team_id, target_kind, target_id, text, contract, dims, embedding)
    SELECT team_id, target_kind, target_id, text, contract, dims, embedding
    FROM graph_documents_unpartitioned;
DROP TABLE evidence_vectors_unpartitioned;
DROP TABLE graph_documents_unpartitioned;

-- Row-level security as on every tenant table: the app reads and writes the parents only
-- (it has no grant on a partition), and a parent's policy applies to what it reaches.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['evidence_vectors', 'graph_documents'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY team_isolation ON %I USING (team_id = mnem_team()) '
                       'WITH CHECK (team_id = mnem_team())', t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO mnem_app', t);
    END LOOP;
END
$$;
