"""The paper's experiments: sources, backend screening (RQ4), the CONFIRM study (RQ1-RQ3), ablations, replication."""
