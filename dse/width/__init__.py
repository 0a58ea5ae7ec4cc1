"""The width model: what a verifier buys by ranking or voting over N samples of one policy
(docs/model.md, "Width: what a PRM buys"). `dse.width.accuracy.accuracy_pct` is the entry
point; `dse.width.params.shipped()` gives the fitted parameters. Nothing is imported here, so
that `import dse` stays light."""
