-- Speculative decoding's numbers for runs whose engine speculated: what the engine's
-- counters said about the measured part (bench_types::SpecDecodeResult: tree, draft,
-- accepted length, acceptance by depth, and the label a random draft's numbers carry).
-- NULL for every other run, and for runs stored before it existed.
ALTER TABLE run_results
    ADD COLUMN speculative JSONB,
    -- A copy of the headline number for sorting and ad-hoc SQL; the JSON is the source.
    -- NULL also when the counters could not be read (the JSON's notes say why).
    ADD COLUMN mean_accepted_length DOUBLE PRECISION;
