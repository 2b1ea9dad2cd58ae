-- Recall feedback: what a client reported about one recall (query, results with ranks,
-- judgments). A record only: nothing reads it while ranking.
CREATE TABLE recall_feedback (
    team_id         uuid NOT NULL REFERENCES teams (team_id),
    feedback_id     uuid NOT NULL,
    profile_id      uuid NOT NULL,
    submitted_at    bigint NOT NULL,
    ranking_profile text NOT NULL,
    query           text NOT NULL,
    PRIMARY KEY (team_id, feedback_id)
);

CREATE TABLE recall_feedback_results (
    team_id     uuid NOT NULL,
    feedback_id uuid NOT NULL,
    rank        bigint NOT NULL,
    evidence_id uuid NOT NULL,
    judgment    text,
    PRIMARY KEY (team_id, feedback_id, rank),
    FOREIGN KEY (team_id, feedback_id) REFERENCES recall_feedback (team_id, feedback_id)
);

-- An item's usage (`mnem show`) counts its rows here.
CREATE INDEX feedback_by_evidence ON recall_feedback_results (team_id, evidence_id);

ALTER TABLE recall_feedback ENABLE ROW LEVEL SECURITY;
ALTER TABLE recall_feedback FORCE ROW LEVEL SECURITY;
CREATE POLICY team_isolation ON recall_feedback USING (team_id = mnem_team())
    WITH CHECK (team_id = mnem_team());
ALTER TABLE recall_feedback_results ENABLE ROW LEVEL SECURITY;
ALTER TABLE recall_feedback_results FORCE ROW LEVEL SECURITY;
CREATE POLICY team_isolation ON recall_feedback_results USING (team_id = mnem_team())
    WITH CHECK (team_id = mnem_team());
GRANT SELECT, INSERT, UPDATE, DELETE ON recall_feedback, recall_feedback_results TO mnem_app;
