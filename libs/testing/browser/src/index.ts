export { ChromiumNotFoundError, findChromium, launchChromium, type ChromiumSearch } from './lib/chromium';
