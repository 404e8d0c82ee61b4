"""The S3 media store against a real S3-compatible server (moto's server mode): verified single-part and
multipart writes, refusals that leave nothing behind, ranged reads, and upload sessions whose presigned PUT
goes straight to the store while downloads stay under {media_url}/assets/<opaque_id>."""

from __future__ import annotations

import hashlib
import os

import httpx
import pytest

from storage.blobs import BlobRejected
from storage.s3 import S3BlobStore, S3Location, s3_store
from tests.media.support import image_bytes, process, sha, start_upload
from tools.runtime import Runtime

pytestmark = pytest.mark.anyio
MiB = 1024 * 1024


async def chunks_of(data: bytes, size: int = 256 * 1024):
    for i in range(0, len(data), size):
        yield data[i:i + size]


def small_part_store(s3_server, bucket: str) -> S3BlobStore:
    settings = s3_server.settings(bucket, "p")
    store = s3_store(settings["media_store"], endpoint_url=settings["s3_endpoint_url"], region="us-east-1",
                     access_key_id=settings["s3_access_key_id"], secret_access_key=settings["s3_secret_access_key"])
    return S3BlobStore(store.client, S3Location.parse(settings["media_store"]), part_size=5 * MiB)


async def read_all(store, key: str, start: int = 0, end: int | None = None) -> bytes:
    return b"".join([c async for c in store.open_range(key, start, end)])


async def test_multipart_write_larger_than_the_part_size(s3_server) -> None:
    bucket = s3_server.new_bucket()
    store = small_part_store(s3_server, bucket)
    data = os.urandom(12 * MiB + 123)
    stored = await store.put_stream("b1/m1/original", chunks_of(data), expected_size=len(data),
                                    expected_sha256=sha(data))
    assert stored.size == len(data) and stored.sha256 == hashlib.sha256(data).hexdigest()
    head = s3_server.client().head_object(Bucket=bucket, Key="p/b1/m1/original")
    assert head["ETag"].strip('"').endswith("-3")  # three parts: 5 MiB, 5 MiB, the rest
    assert await store.size("b1/m1/original") == len(data)
    assert await read_all(store, "b1/m1/original") == data
    assert await read_all(store, "b1/m1/original", 5 * MiB - 10, 5 * MiB + 9) == data[5 * MiB - 10:5 * MiB + 10]
    async with store.local_path("b1/m1/original") as path:
        assert path.read_bytes() == data
    await store.delete("b1/m1/original")
    assert await store.size("b1/m1/original") is None


@pytest.mark.parametrize("case", ["hash_mismatch", "too_large", "too_small"])
async def test_refused_multipart_write_leaves_nothing(s3_server, case) -> None:
    bucket = s3_server.new_bucket()
    store = small_part_store(s3_server, bucket)
    data = os.urandom(11 * MiB)
    expected = {"hash_mismatch": (len(data), "0" * 64), "too_large": (len(data) - 1, None),
                "too_small": (len(data) + 1, None)}[case]
    with pytest.raises(BlobRejected) as refused:
        await store.put_stream("b/m/original", chunks_of(data), expected_size=expected[0],
                               expected_sha256=expected[1])
    assert refused.value.reason == case
    assert await store.size("b/m/original") is None
    assert s3_server.client().list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


async def test_small_write_is_one_put_and_refusal_stores_nothing(s3_server) -> None:
    bucket = s3_server.new_bucket()
    store = small_part_store(s3_server, bucket)
    with pytest.raises(BlobRejected):
        await store.put_stream("b/m/x", chunks_of(b"hello"), expected_sha256="0" * 64)
    assert await store.size("b/m/x") is None
    stored = await store.put_stream("b/m/x", chunks_of(b"hello"), expected_sha256=sha(b"hello"))
    assert stored.size == 5 and await read_all(store, "b/m/x", 1, 3) == b"ell"


async def test_upload_session_presigned_put_then_assets_served_by_the_service(world, s3_server) -> None:
    env, brand = world.env, world.brand_a
    bucket = s3_server.new_bucket()
    rt = Runtime(settings=env.rt.settings.model_copy(update=s3_server.settings(bucket)), db=env.db, clock=env.clock)
    env.rt.settings = rt.settings  # the test app and worker now use the object store
    data = image_bytes(640, 480, "PNG")
    session = await start_upload(env, world.full_key, brand.id, data, "image/png", filename="pic.png")
    upload = session["upload"]
    assert upload["url"].startswith(f"{s3_server.endpoint_url}/{bucket}/socialpub/incoming/{session['id']}?")
    assert upload["headers"]["x-amz-checksum-sha256"] and upload["headers"]["Content-Length"] == str(len(data))
    assert s3_server.endpoint_url not in session["download_url"]

    async with httpx.AsyncClient() as http:
        # Other bytes of the same length: refused by S3 (the signed checksum) or, failing that, by the worker.
        wrong = bytes(reversed(data))
        await http.put(upload["url"], content=wrong, headers=upload["headers"])
        await process(env)
        item = (await env.rest.get(f"/v1/brands/{brand.id}/media/{session['id']}",
                                   headers=env.auth(world.full_key))).json()["data"]
        assert item["status"] == "pending_upload"
        resp = await http.put(upload["url"], content=data, headers=upload["headers"])
        assert resp.status_code == 200, resp.text
    assert await process(env) >= 1
    item = (await env.rest.get(f"/v1/brands/{brand.id}/media/{session['id']}",
                               headers=env.auth(world.full_key))).json()["data"]
    assert item["status"] == "completed", item
    assert s3_server.endpoint_url not in str(item)
    path = item["download_url"].removeprefix("http://testserver")
    assert path.startswith("/media/assets/")
    got = await env.rest.get(path)
    assert got.status_code == 200 and got.content == data
    # The accepted bytes were copied out of incoming/: a second PUT to the URL cannot replace them.
    keys = [o["Key"] for o in s3_server.client().list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert not any("/incoming/" in k for k in keys)
    async with httpx.AsyncClient() as http:
        await http.put(upload["url"], content=data, headers=upload["headers"])
    await process(env)
    assert (await env.rest.get(path)).content == data
