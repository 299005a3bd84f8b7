"""Pending clustering plans: the file groups a clustering Hudi scheduled is going to replace
(`ClusteringUtils.getAllFileGroupsInPendingClusteringPlans`).

A clustering is requested as `<t>.replacecommit.requested` at table version 6 and as
`<t>.clustering.requested` at 8 and 9, holding a `HoodieRequestedReplaceMetadata` whose `clusteringPlan`
names the input file slices. When it completes, those file groups are replaced whole: whatever was
written into them after the plan was made is not in the plan and is gone from every read. So Hudi's
writers refuse to update them (`SparkRejectUpdateStrategy`, the default `hoodie.clustering.updates.strategy`)
and do not pad them with inserts (`UpsertPartitioner.filterSmallFilesInClustering`).

An insert overwrite also requests a replacecommit, with an empty file or a metadata whose operation type is
not CLUSTER (`ClusteringUtils.getRequestedReplaceMetadata`, `getClusteringPlan`): it plans no groups. The plan
is read from the requested file in every state ("inflight replacecommit files don't have clustering plan").
"""

from __future__ import annotations

from ingest.hudi.avro import avro_models
from ingest.hudi.timeline.instant import Action, State
from ingest.hudi.timeline.timeline import Timeline, read_instant
from ingest.storage import Storage

CLUSTER = "CLUSTER"  # WriteOperationType.CLUSTER


def pending_clustering_groups(storage: Storage, timeline: Timeline) -> dict[tuple[str, str], str]:
    """(partition, file id) -> the pending clustering that will replace the file group."""
    out: dict[tuple[str, str], str] = {}
    for instant in timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING):
        requested = instant.to(State.REQUESTED)
        if timeline.layout.file_name(requested) not in timeline.files:
            continue  # no plan to read: Hudi takes it for no clustering either
        data = read_instant(storage, requested, timeline.layout)
        if not data:
            continue
        metadata = avro_models.deserialize(data, avro_models.REQUESTED_REPLACE_METADATA)
        if metadata.get("operationType") != CLUSTER:
            continue
        for group in (metadata.get("clusteringPlan") or {}).get("inputGroups") or ():
            for slice_info in group.get("slices") or ():
                out[(slice_info.get("partitionPath") or "", slice_info["fileId"])] = instant.timestamp
    return out
