-- Upgrades a model file from schema revision 2 to 3, after model.sql has
-- created the change feed: every published work gets one change that
-- carries its row, so that the feed read from its start is the whole
-- catalogue, as it is in a file projected by revision 3. The changes follow
-- the feed's horizon in export order.

INSERT INTO change_feed (sequence, audience, lcc_id, body)
SELECT
    (SELECT horizon FROM change_feed_state) + row_number() OVER (ORDER BY audience, bucket, lcc_id),
    audience,
    lcc_id,
    body
FROM bulk_rows;
