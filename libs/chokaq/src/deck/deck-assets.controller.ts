import {
  Controller,
  Get,
  Headers,
  NotFoundException,
  Param,
  Req,
  Res,
  StreamableFile,
} from '@nestjs/common';
import { DeckAssets, type DeckAsset } from './deck-assets';

/** What both Express and Fastify responses offer, all the asset routes use. */
interface HeaderResponse {
  status(code: number): unknown;
  header(name: string, value: string): unknown;
}

/**
 * The page shell and the static files. They carry no data, so they are served without the Deck's
 * guards (the app's global guards still run), under the Deck's CSP; every byte of data comes from
 * the guarded API. Names are looked up in a fixed map: no part of the URL reaches the file system.
 */
@Controller()
export class DeckAssetsController {
  constructor(private readonly assets: DeckAssets) {}

  @Get()
  page(
    @Req() req: PageRequest,
    @Headers('if-none-match') etag: string | undefined,
    @Res({ passthrough: true }) res: HeaderResponse,
  ): StreamableFile | undefined {
    const path = mountPath(req);
    return send(res, this.assets.page(path.endsWith('/') ? path : `${path}/`), etag, 'no-store');
  }

  @Get('assets/vendor/:name')
  vendor(
    @Param('name') name: string,
    @Headers('if-none-match') etag: string | undefined,
    @Res({ passthrough: true }) res: HeaderResponse,
  ): StreamableFile | undefined {
    return this.asset(`vendor/${name}`, etag, res);
  }

  @Get('assets/:name')
  file(
    @Param('name') name: string,
    @Headers('if-none-match') etag: string | undefined,
    @Res({ passthrough: true }) res: HeaderResponse,
  ): StreamableFile | undefined {
    return this.asset(name, etag, res);
  }

  private asset(
    name: string,
    etag: string | undefined,
    res: HeaderResponse,
  ): StreamableFile | undefined {
    const asset = this.assets.get(name);
    if (!asset) throw new NotFoundException('No such Deck asset.');
    return send(res, asset, etag, 'no-cache');
  }
}

function send(
  res: HeaderResponse,
  asset: DeckAsset,
  ifNoneMatch: string | undefined,
  cacheControl: string,
): StreamableFile | undefined {
  res.header('Content-Type', asset.contentType);
  res.header('Cache-Control', cacheControl);
  res.header('ETag', asset.etag);
  if (ifNoneMatch === asset.etag) {
    res.status(304);
    return undefined;
  }
  return new StreamableFile(asset.body, { type: asset.contentType, length: asset.body.length });
}

/** What the page route reads of its request: the route it matched, as Express and Fastify say. */
interface PageRequest {
  originalUrl?: string;
  url?: string;
  /** Express: the matched route, whose `path` is the pattern it was registered with. */
  route?: { path?: unknown };
  /** Fastify 4 and 5: the matched route's pattern. */
  routeOptions?: { url?: unknown };
}

/**
 * Where the Deck is mounted, for the page's `<base href>`: the pattern of the route this request
 * matched (the app's global prefix, version and the Deck's path, as Nest registered it), not the
 * request target, which a client chooses. Only when the platform says nothing, the request's path
 * with repeated slashes collapsed (`//host/…` would make the base another origin's; CSP's
 * `base-uri 'self'` refuses such a base too).
 */
function mountPath(req: PageRequest): string {
  const pattern = req.route?.path ?? req.routeOptions?.url;
  if (typeof pattern === 'string' && pattern.startsWith('/') && !/[:*?(]/.test(pattern)) {
    return pattern;
  }
  return (req.originalUrl ?? req.url ?? '/').split('?')[0].replace(/\/{2,}/g, '/');
}
