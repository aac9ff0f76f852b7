"""The paper grid's cluster cost on paper: `projection` (the model and the command), `report`
(measured shard times of a finished run and the page) and `sizes` (the grid read from the paper configs)."""
