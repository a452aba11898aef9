"""Token auth for the inbox's auth test: two users, each sees and resumes only their threads.

The shape LangGraph's docs give for per-user threads: authenticate the bearer token, stamp the
owner on what a user creates, and filter everything else by owner.
"""

from __future__ import annotations

from langgraph_sdk import Auth

auth = Auth()
USERS = {"token-alice": "alice", "token-bob": "bob"}


@auth.authenticate
async def authenticate(authorization: str | None) -> str:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or token not in USERS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="unknown or missing token")
    return USERS[token]


@auth.on
async def owner_only(ctx: Auth.types.AuthContext, value: dict) -> dict:
    owner = {"owner": ctx.user.identity}
    metadata = value.setdefault("metadata", {})
    metadata.update(owner)
    return owner
